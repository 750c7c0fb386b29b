import { defineService } from '@svc/kit';
import { profiles } from '@svc/proto';

/**
 * The profiles service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const profilesService = defineService({
  name: 'profiles',
  grpcServiceName: 'svc.profiles.v1.ProfilesService',
  definition: profiles.ProfilesServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
