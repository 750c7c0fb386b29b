import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { agents } from '@svc/proto';

export const agentsDefinition = agents.AgentsServiceService;
export type AgentsClient = RpcClient<typeof agentsDefinition>;

/** The agents service's client (the caller must declare agents in its catalogue `calls`). */
export const agentsClient = (registry: Registry): AgentsClient => registry.client('agents', agentsDefinition, grpcServiceName('agents'));
