import { defineService } from '@svc/kit';
import { drive } from '@svc/proto';

/**
 * The drive service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const driveService = defineService({
  name: 'drive',
  grpcServiceName: 'svc.drive.v1.DriveService',
  definition: drive.DriveServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
