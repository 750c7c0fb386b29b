import { GRPC_SERVICE_NAMES, type GrpcServiceName, grpcServiceName, type ServiceDefinition } from '@svc/kit';
import * as proto from '@svc/proto';

export * from './accounts.js';
export * from './agents.js';
export * from './drive.js';
export * from './keys.js';
export * from './mcp.js';
export * from './models.js';
export * from './profiles.js';
export * from './trading.js';

/**
 * Each gRPC service's proto definition, found by the catalogue's name (`svc.<name>.v1`'s
 * `<Name>Service`, generated as `proto.<name>.<Name>ServiceService`); test/platform/catalogue.test.ts
 * holds each to the catalogue's gRPC name.
 */
function protoDefinition(name: GrpcServiceName): ServiceDefinition {
  const generated: Record<string, Record<string, unknown> | undefined> = proto;
  const definition = generated[name]?.[`${name[0]!.toUpperCase()}${name.slice(1)}ServiceService`] as ServiceDefinition | undefined;
  if (!definition) throw new Error(`@svc/proto has no ${name} service definition`);
  return definition;
}

/** Each gRPC service's proto definition and full service name (what `Registry.client` takes), from the catalogue. */
export const DEFINITIONS = Object.fromEntries(GRPC_SERVICE_NAMES.map((name) => [name, [protoDefinition(name), grpcServiceName(name)]])) as Record<
  GrpcServiceName,
  [ServiceDefinition, string]
>;
