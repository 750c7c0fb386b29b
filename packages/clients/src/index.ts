import { GRPC_SERVICE_NAMES, type GrpcServiceName, grpcServiceName } from '@svc/kit';

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

/** The proto definition of each gRPC service of the catalogue: a service missing here does not compile. */
const PROTO_DEFINITIONS: Record<GrpcServiceName, Record<string, any>> = {
  keys: keysDefinition,
  accounts: accountsDefinition,
  drive: driveDefinition,
  agents: agentsDefinition,
  models: modelsDefinition,
  trading: tradingDefinition,
  profiles: profilesDefinition,
  mcp: mcpDefinition,
};

/** Each gRPC service's proto definition and full service name (what `Registry.client` takes), from the catalogue. */
export const DEFINITIONS = Object.fromEntries(GRPC_SERVICE_NAMES.map((name) => [name, [PROTO_DEFINITIONS[name], grpcServiceName(name)]])) as Record<
  GrpcServiceName,
  [Record<string, any>, string]
>;
