import { defineService, defineSettings } from '@svc/kit';
import { mcp } from '@svc/proto';

import { runCode, runCodeSettings } from './run-code.js';

export { MAX_CODE_CHARS, runCode, runCodeSettings } from './run-code.js';

/**
 * The mcp service: for now the code sandbox (RunCode, docs/run-code.md). Its other HTTP routes are
 * declared in the route table and answer 501 until their issue lands.
 */
export const mcpService = defineService({
  name: 'mcp',
  grpcServiceName: 'svc.mcp.v1.McpService',
  definition: mcp.McpServiceService,
  needs: [],
  settings: defineSettings({ ...runCodeSettings }),
  async create(ctx) {
    const code = runCode(ctx.settings, ctx.log);
    return { handlers: { ...code.handlers }, start: code.start, stop: code.stop };
  },
});
