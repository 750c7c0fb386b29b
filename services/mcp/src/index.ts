import { defineService, defineSettings } from '@svc/kit';
import { mcp } from '@svc/proto';

import { runCode, runCodeSettings } from './run-code.js';
import { mcpSettings, serveHttp } from './serve-http.js';

export { MAX_CODE_CHARS, runCode, runCodeSettings } from './run-code.js';
export { mcpSettings } from './serve-http.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const VERSION: string = require('../package.json').version;

/**
 * The mcp service: the code sandbox (RunCode, docs/run-code.md), which the MCP tool run_code and
 * the API's code operations reach over gRPC; and ServeHttp, the MCP endpoint as gateways of the
 * previous release reached it (the gateway serves POST /mcp itself now, docs/mcp.md).
 */
export const mcpService = defineService({
  name: 'mcp',
  grpcServiceName: 'svc.mcp.v1.McpService',
  definition: mcp.McpServiceService,
  needs: [],
  settings: defineSettings({ ...runCodeSettings, ...mcpSettings }),
  async create(ctx) {
    const code = runCode(ctx.settings, ctx.log);
    const server = serveHttp(ctx, VERSION, code.handlers);
    return {
      handlers: { ...code.handlers, ...server.handlers },
      start: code.start,
      async stop() {
        await server.stop();
        await code.stop();
      },
    };
  },
});
