import type { GrpcServiceName } from '@svc/kit';
import type * as proto from '@svc/proto';

/**
 * Each gRPC service's generated definition, from the catalogue's names (`svc.<name>.v1`'s
 * `<Name>Service`, generated as `proto.<name>.<Name>ServiceService`): where the request and
 * response types of an operation come from. A catalogue service without its definition is `never`
 * here, and test/platform/catalogue.test.ts names it.
 */
type Definitions = { [S in GrpcServiceName]: ProtoDefinition<S> };
type ProtoDefinition<S extends GrpcServiceName> = `${Capitalize<S>}ServiceService` extends infer D extends keyof (typeof proto)[S]
  ? (typeof proto)[S][D]
  : never;

export type RpcService = GrpcServiceName;
export type MethodOf<S extends RpcService> = Extract<keyof Definitions[S], string>;
export type RequestOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { requestSerialize: (value: infer R) => Buffer }
  ? R
  : never;
export type ResponseOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { responseDeserialize: (value: Buffer) => infer R }
  ? R
  : never;

/**
 * How a route's operation is one call of `service.method` (`{ rpc: 'drive.getItem', ... }`), with
 * the request and response types of the generated proto code and the input and answer types of
 * the route (I, O: `route()` infers them from its schemas): a mapping that builds a wrong request,
 * reads a field the input or the response does not have, or answers what the response schema does
 * not describe fails to compile.
 */
export type RpcDeclaration<I, O, Rq> = {
  [S in RpcService]: { [M in MethodOf<S>]: RpcMapping<S, M, I, O, Rq> }[MethodOf<S>];
}[RpcService];

interface RpcMapping<S extends RpcService, M extends MethodOf<S>, I, O, Rq> {
  rpc: `${S}.${M}`;
  /** Builds the gRPC request (default: params, query and body merged). A field the request does not have is a compile error (`never`), not silently dropped. */
  request?: (input: I) => Rq & Partial<RequestOf<S, M>> & Record<Exclude<keyof Rq, keyof RequestOf<S, M>>, never>;
  /** Builds the answer from the gRPC response (default: the response as is). */
  response?: (res: ResponseOf<S, M>, input: I) => O;
  /** The ids of the API keys this operation revokes (see RpcHandler.revokesKey). */
  revokesKey?: (input: I, res: ResponseOf<S, M>) => string | string[];
  deadlineMs?: number;
  cache?: { tag: string; ttlMs: number };
  invalidates?: string[];
}
