import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { agents, agents_approvals, agents_memory, agents_schedules, agents_tasks, agents_threads } from '@svc/proto';

/**
 * The agents service's methods: one gRPC service per area of proto/svc/agents/v1 (agents, threads,
 * approvals, memory, tasks, schedules), served by one server and called through one client, each
 * method on its own service's path.
 */
export const agentsDefinition = {
  ...agents.AgentsServiceService,
  ...agents_threads.ThreadsServiceService,
  ...agents_approvals.ApprovalsServiceService,
  ...agents_memory.MemoryServiceService,
  ...agents_tasks.TasksServiceService,
  ...agents_schedules.SchedulesServiceService,
};
export type AgentsClient = RpcClient<typeof agentsDefinition>;

/** The agents service's client (the caller must declare agents in its catalogue `calls`). */
export const agentsClient = (registry: Registry): AgentsClient => registry.client('agents', agentsDefinition, grpcServiceName('agents'));
