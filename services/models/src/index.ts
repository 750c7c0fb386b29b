import { defineService } from '@svc/kit';
import { models } from '@svc/proto';

/**
 * The models service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const modelsService = defineService({
  name: 'models',
  grpcServiceName: 'svc.models.v1.ModelsService',
  definition: models.ModelsServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
