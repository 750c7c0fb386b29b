import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { profiles } from '@svc/proto';

export const profilesDefinition = profiles.ProfilesServiceService;
export type ProfilesClient = RpcClient<typeof profilesDefinition>;

/** The profiles service's client (the caller must declare profiles in its catalogue `calls`). */
export const profilesClient = (registry: Registry): ProfilesClient => registry.client('profiles', profilesDefinition, grpcServiceName('profiles'));
