import type { ServiceName } from '@svc/kit';
import { z } from 'zod';

export type { ServiceName };
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type PrincipalKind = 'human' | 'agent' | 'host';

/** The validated input of an operation: path params, query and body, each parsed by its schema. */
export interface RouteInput {
  params: Record<string, any>;
  query: Record<string, any>;
  body: any;
  /** The headers the route declares (lowercase names), parsed by its `headers` schema. */
  headers: Record<string, any>;
}

/**
 * What a response mapper returns when it needs more than a JSON body: a status, headers
 * (ETag, Location, ...). Build it with `reply()`.
 */
export interface HttpReply {
  readonly $reply: true;
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

export function reply(body: unknown, opts: { status?: number; headers?: Record<string, string> } = {}): HttpReply {
  return { $reply: true, body, ...opts };
}

export function isReply(v: unknown): v is HttpReply {
  return typeof v === 'object' && v !== null && (v as { $reply?: unknown }).$reply === true;
}

/**
 * One operation of the public API, declared once. The gateway's routing, input
 * validation, authority checks and the OpenAPI document all come from these entries.
 */
export interface Route {
  /** operationId, `<group>.<verb>`. */
  id: string;
  method: HttpMethod;
  /** Express-style path without the optional /v1 prefix (`/agents/:id/keys`). */
  path: string;
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** JSON body limit when the operation needs more than SVC_BODY_LIMIT (e.g. `16mb`). */
  bodyLimit?: string;
  /** Request headers the operation reads (lowercase names, e.g. `if-match`). */
  headers?: z.ZodObject;
  response: z.ZodType;
  /** Success status (200 unless given). */
  status?: number;
  /** `none`: no credential needed. */
  auth: 'key' | 'none';
  /** Principal kinds that may call it at all. */
  principals: PrincipalKind[];
  /** Changes authority (grants, owners, settings, signing keys, hosts): agents get 403. */
  authority: boolean;
  /**
   * How it is served: `rpc` maps to one gRPC method of a service; `local` is answered by the
   * gateway itself; `unimplemented` answers 501 until its service lands.
   */
  handler:
    | {
        kind: 'rpc';
        service: ServiceName;
        method: string;
        /** Builds the gRPC request (default: params, query and body merged). */
        request?: (input: RouteInput) => unknown;
        /** Builds the HTTP answer from the gRPC response (default: the response as is). */
        response?: (res: any, input: RouteInput) => unknown;
        /** The id of the API key this operation revokes: the gateway forgets it before answering. */
        revokesKey?: (input: RouteInput) => string;
      }
    /** Served by a gateway handler registered under `name` (streams, WebDAV-like bodies). */
    | { kind: 'local'; name: string }
    | { kind: 'unimplemented'; service: ServiceName };
}

export function route(r: Route): Route {
  return r;
}

// Shared schemas ------------------------------------------------------------------------------

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().describe('Stable snake_case error code.'),
      message: z.string().describe('A human sentence.'),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'Error' });

export const Timestamp = z.string().describe('ISO 8601 UTC with milliseconds');
export const Nullable = <T extends z.ZodType>(t: T) => t.nullable().default(null as never);

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

export const Success = z.object({ success: z.literal(true) });

/** An id of one type (DESIGN §3): `<prefix>_` + 26 lowercase base32 characters. */
export const prefixedId = (prefix: string, what: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{26}$`), `must be ${what} (${prefix}_…)`);

export const AccountId = prefixedId('acct', 'an account id');
export const AgentId = prefixedId('agt', 'an agent id');

/** A project scope, as keys carry it and resources are filed under. */
export const ProjectId = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'may hold letters, digits and _ . : - only');

/** A display name: 1–100 characters, trimmed, no control characters. */
export const DisplayName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not hold control characters');

/** Placeholder schemas of operations whose service has not landed yet. */
export const Unspecified = z.unknown();
