import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { accounts } from '@svc/proto';

export const accountsDefinition = accounts.AccountsServiceService;
export type AccountsClient = RpcClient<typeof accountsDefinition>;

/** The accounts service's client (the caller must declare accounts in its catalogue `calls`). */
export const accountsClient = (registry: Registry): AccountsClient => registry.client('accounts', accountsDefinition, grpcServiceName('accounts'));
