import { defineService } from '@svc/kit';
import { mcp } from '@svc/proto';

/**
 * The mcp service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const mcpService = defineService({
  name: 'mcp',
  grpcServiceName: 'svc.mcp.v1.McpService',
  definition: mcp.McpServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
