import { defineService } from '@svc/kit';
import { agents } from '@svc/proto';

/**
 * The agents service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const agentsService = defineService({
  name: 'agents',
  grpcServiceName: 'svc.agents.v1.AgentsService',
  definition: agents.AgentsServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
