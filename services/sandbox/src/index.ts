import { defineService, defineSettings } from '@svc/kit';
import { mcp } from '@svc/proto';

import { runCode, runCodeSettings } from './run-code.js';

export { accountShare, MAX_CODE_CHARS, runCode, runCodeSettings } from './run-code.js';

/**
 * The code sandbox (RunCode, docs/run-code.md), which the MCP tool run_code and the API's code
 * operations reach over gRPC. Deployed under its catalogue name `mcp` (SVC_SERVICE=mcp, the
 * chart's `mcp` component), kept from when it also served the MCP endpoint, which the gateway
 * serves now (docs/mcp.md).
 */
export const sandboxService = defineService({
  name: 'mcp',
  grpcServiceName: 'svc.mcp.v1.McpService',
  definition: mcp.McpServiceService,
  needs: [],
  settings: defineSettings(runCodeSettings),
  async create(ctx) {
    const code = runCode(ctx.settings, ctx.log, ctx.config.SVC_HEAVY_WORK_NICE);
    return { handlers: code.handlers, start: code.start, stop: code.stop };
  },
});
