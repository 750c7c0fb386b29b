import type * as proto from '@svc/proto';

import type { RouteInput, RpcHandler } from './route.js';

/** Each service's generated definition: where the request and response types of an operation come from. */
interface Definitions {
  keys: typeof proto.keys.KeysServiceService;
  accounts: typeof proto.accounts.AccountsServiceService;
  drive: typeof proto.drive.DriveServiceService;
  agents: typeof proto.agents.AgentsServiceService &
    typeof proto.agents_threads.ThreadsServiceService &
    typeof proto.agents_approvals.ApprovalsServiceService &
    typeof proto.agents_memory.MemoryServiceService &
    typeof proto.agents_tasks.TasksServiceService &
    typeof proto.agents_schedules.SchedulesServiceService;
  models: typeof proto.models.ModelsServiceService;
  trading: typeof proto.trading.TradingServiceService;
  profiles: typeof proto.profiles.ProfilesServiceService;
  mcp: typeof proto.mcp.McpServiceService;
}

type RpcService = keyof Definitions;
type MethodOf<S extends RpcService> = Extract<keyof Definitions[S], string>;
type RequestOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { requestSerialize: (value: infer R) => Buffer } ? R : never;
type ResponseOf<S extends RpcService, M extends MethodOf<S>> = Definitions[S][M] extends { responseDeserialize: (value: Buffer) => infer R }
  ? R
  : never;

/**
 * Declares that an operation is one call of `service.method`, with the request and response types
 * of the generated proto code: a mapping that builds a wrong request or reads a field the response
 * does not have fails to compile.
 */
export function rpc<S extends RpcService, M extends MethodOf<S>, Q extends Partial<RequestOf<S, M>> = Partial<RequestOf<S, M>>>(
  service: S,
  method: M,
  map: {
    /** A field the request does not have is a compile error (`never`), not silently dropped. */
    request?: (input: RouteInput) => Q & Record<Exclude<keyof Q, keyof RequestOf<S, M>>, never>;
    response?: (res: ResponseOf<S, M>, input: RouteInput) => unknown;
    revokesKey?: (input: RouteInput, res: ResponseOf<S, M>) => string | string[];
    deadlineMs?: number;
    cache?: { tag: string; ttlMs: number };
    invalidates?: string[];
  } = {},
): RpcHandler {
  return { kind: 'rpc', service, method, ...map } as RpcHandler;
}
