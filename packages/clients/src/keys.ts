import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { keys } from '@svc/proto';

export const keysDefinition = keys.KeysServiceService;
export type KeysClient = RpcClient<typeof keysDefinition>;

/** The keys service's client (the caller must declare keys in its catalogue `calls`). */
export const keysClient = (registry: Registry): KeysClient => registry.client('keys', keysDefinition, grpcServiceName('keys'));
