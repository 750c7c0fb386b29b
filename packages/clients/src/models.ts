import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { models } from '@svc/proto';

export const modelsDefinition = models.ModelsServiceService;
export type ModelsClient = RpcClient<typeof modelsDefinition>;

/** The models service's client (the caller must declare models in its catalogue `calls`). */
export const modelsClient = (registry: Registry): ModelsClient => registry.client('models', modelsDefinition, grpcServiceName('models'));
