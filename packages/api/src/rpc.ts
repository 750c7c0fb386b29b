import type { ProtoDefinitions } from '@svc/clients';
import type { GrpcServiceName } from '@svc/kit';

/**
 * Each gRPC service's generated definition (the union of its areas' services for the agents
 * service), as @svc/clients types it (its map is held to the catalogue's gRPC services by the
 * compiler): where the request and response types of an operation come from.
 */
type Definitions = ProtoDefinitions;

export type RpcService = GrpcServiceName;
export type MethodOf<S extends RpcService> = Extract<keyof Definitions[S], string>;
export type RequestOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { requestSerialize: (value: infer R) => Buffer }
  ? R
  : never;
export type ResponseOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { responseDeserialize: (value: Buffer) => infer R }
  ? R
  : never;

/** Every method of every gRPC service, as `service.method` (`drive.getItem`). */
export type RpcTarget = { [S in RpcService]: `${S}.${MethodOf<S>}` }[RpcService];
type RequestAt<T> = T extends `${infer S extends RpcService}.${infer M}` ? (M extends MethodOf<S> ? RequestOf<S, M> : never) : never;
type ResponseAt<T> = T extends `${infer S extends RpcService}.${infer M}` ? (M extends MethodOf<S> ? ResponseOf<S, M> : never) : never;

/**
 * How a route's operation is one call of `service.method` (`{ rpc: 'drive.getItem', ... }`), with
 * the request and response types of the generated proto code and the input and answer types of
 * the route (T, I, O: `route()` infers them from the declaration and its schemas): a mapping that
 * builds a wrong request, reads a field the input or the response does not have, or answers what
 * the response schema does not describe fails to compile.
 */
export interface RpcDeclaration<T extends RpcTarget, I, O, Rq> {
  rpc: T;
  /** Builds the gRPC request (default: params, query and body merged). A field the request does not have is a compile error (`never`), not silently dropped. */
  request?: (input: I) => Rq & Partial<RequestAt<T>> & Record<Exclude<keyof Rq, keyof RequestAt<T>>, never>;
  /** Builds the answer from the gRPC response (default: the response as is). */
  response?: (res: ResponseAt<T>, input: I) => O;
  /** The ids of the API keys this operation revokes (see RpcHandler.revokesKey). */
  revokesKey?: (input: I, res: ResponseAt<T>) => string | string[];
  deadlineMs?: number;
  cache?: { tag: string; ttlMs: number };
  invalidates?: string[];
}
