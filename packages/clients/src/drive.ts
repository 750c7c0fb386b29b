import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { drive } from '@svc/proto';

export const driveDefinition = drive.DriveServiceService;
export type DriveClient = RpcClient<typeof driveDefinition>;

/** The drive service's client (the caller must declare drive in its catalogue `calls`). */
export const driveClient = (registry: Registry): DriveClient => registry.client('drive', driveDefinition, grpcServiceName('drive'));
