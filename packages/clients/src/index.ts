import { GRPC_SERVICE_NAMES, type GrpcServiceName, grpcServiceName, type ServiceDefinition } from '@svc/kit';

import { accountsDefinition } from './accounts.js';
import { agentsDefinition } from './agents.js';
import { driveDefinition } from './drive.js';
import { keysDefinition } from './keys.js';
import { mcpDefinition } from './mcp.js';
import { modelsDefinition } from './models.js';
import { profilesDefinition } from './profiles.js';
import { tradingDefinition } from './trading.js';

export * from './accounts.js';
export * from './agents.js';
export * from './drive.js';
export * from './keys.js';
export * from './mcp.js';
export * from './models.js';
export * from './profiles.js';
export * from './trading.js';

/**
 * The proto definition of each gRPC service of the catalogue (the union of its areas' services for
 * the agents service): a service missing here, or one the catalogue does not name, does not compile.
 */
const PROTO_DEFINITIONS = {
  keys: keysDefinition,
  accounts: accountsDefinition,
  drive: driveDefinition,
  agents: agentsDefinition,
  models: modelsDefinition,
  trading: tradingDefinition,
  profiles: profilesDefinition,
  mcp: mcpDefinition,
} satisfies Record<GrpcServiceName, ServiceDefinition>;

/** Each gRPC service's proto definition, typed (@svc/api's rpc types come from it). */
export type ProtoDefinitions = typeof PROTO_DEFINITIONS;

/** Each gRPC service's proto definition and full service name (what `Registry.client` takes), from the catalogue. */
const ERASED: Record<GrpcServiceName, ServiceDefinition> = PROTO_DEFINITIONS;
export const DEFINITIONS = Object.fromEntries(GRPC_SERVICE_NAMES.map((name) => [name, [ERASED[name], grpcServiceName(name)]])) as Record<
  GrpcServiceName,
  [ServiceDefinition, string]
>;
