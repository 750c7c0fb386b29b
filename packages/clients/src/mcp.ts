import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { mcp } from '@svc/proto';

export const mcpDefinition = mcp.McpServiceService;
export type McpClient = RpcClient<typeof mcpDefinition>;

/** The mcp service's client (the caller must declare mcp in its catalogue `calls`). */
export const mcpClient = (registry: Registry): McpClient => registry.client('mcp', mcpDefinition, grpcServiceName('mcp'));
