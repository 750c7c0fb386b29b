/**
 * The in-process transport: a unary call from one service to another served by the same process
 * (the all-in-one stack) skips HTTP/2 and the socket, but not the wire format. The caller's request
 * is encoded to protobuf bytes as for the wire, the server decodes them and runs its grpc-js
 * implementation (bindService's: the principal verified, a DomainError turned into a status with
 * its kind and code in trailing metadata), and the answer comes back as encoded bytes or as the
 * status a gRPC client would have read. So the caller's decoding and its error mapping
 * (createRpcClient) are the same code on both transports; only the framing, HTTP/2 and the socket
 * are left out.
 *
 * Measured (docs/keys.md#performance): in the one-process stack, HTTP/2 and grpc-js's server were
 * about a quarter of the CPU of a request that makes one call. Streaming calls always go over
 * HTTP/2. The transport is on unless SVC_GRPC_TRANSPORT=wire, or tracing is on: grpc-js's
 * instrumentation makes the server spans, and a trace should look the same whatever runs where.
 * CI's first pass runs the whole suite with SVC_GRPC_TRANSPORT=wire.
 */
import { AsyncResource } from 'node:async_hooks';
import { EventEmitter } from 'node:events';

import * as grpc from '@grpc/grpc-js';

import { atDeadline } from './deadlines.js';

/** A method served in this process: the request's bytes in, the response's bytes out, or a UnaryCallError. */
export type LocalMethod = (message: Buffer, headers: Record<string, string>, deadline: number, signal?: AbortSignal) => Promise<Buffer>;

/** The failure of a call made in process, as a UnaryCallError would carry it (see unary.ts). */
export interface LocalFailure {
  code: number;
  details: string;
  metadata: Record<string, string>;
}

/** Servers of this process that take calls in process: by address, their methods by path. */
const servers = new Map<string, Map<string, LocalMethod>>();

/** The method at `path` of the server at `address`, when that server runs in this process and takes calls in process. */
export function localMethod(address: string, path: string): LocalMethod | undefined {
  return servers.get(address)?.get(path);
}

/** grpc-js's server limit on a request (grpc.ts: 'grpc.max_receive_message_length'). */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/**
 * Handlers run in the async context of the process's start, not in their caller's: over the wire a
 * call begins on the server's socket, so nothing the caller holds in AsyncLocalStorage (an open
 * transaction's frame, sql-guard.ts) leaks into the service it calls.
 */
const detached = new AsyncResource('svc.in-process-call');

/** The grpc-js call object a bindService implementation reads: request, metadata, cancellation. */
class LocalCall extends EventEmitter {
  cancelled = false;
  constructor(
    readonly request: unknown,
    readonly metadata: grpc.Metadata,
  ) {
    super();
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emit('cancelled', 'cancelled');
  }
}

/** Trailing metadata as our client reads it from HTTP/2 trailers: `-bin` values base64. */
function trailersOf(md: grpc.Metadata | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!md) return out;
  for (const [k, v] of Object.entries(md.getMap())) out[k] = Buffer.isBuffer(v) ? v.toString('base64') : String(v);
  return out;
}

type Impl = (call: LocalCall, callback: (err: Partial<grpc.StatusObject> | null, res?: unknown) => void) => void;

interface UnaryDef {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: unknown): Buffer;
}

const failure = (code: number, details: string, metadata: Record<string, string> = {}): LocalFailure => ({ code, details, metadata });

/** One unary method of a bindService implementation, called with the request's bytes. */
function localMethodOf(def: UnaryDef, impl: Impl): LocalMethod {
  return (message, headers, deadline, signal) =>
    new Promise<Buffer>((resolve, reject) => {
      if (message.length > MAX_REQUEST_BYTES) {
        return reject(failure(grpc.status.RESOURCE_EXHAUSTED, `Received message larger than max (${message.length} vs. ${MAX_REQUEST_BYTES})`));
      }
      let request: unknown;
      try {
        request = def.requestDeserialize(message);
      } catch {
        return reject(failure(grpc.status.INTERNAL, 'Error deserializing request'));
      }
      const metadata = new grpc.Metadata();
      for (const k in headers) metadata.set(k, headers[k]!);
      const call = new LocalCall(request, metadata);
      let settled = false;
      const end = (failed: LocalFailure | null, bytes?: Buffer) => {
        if (settled) return;
        settled = true;
        clearTimer();
        signal?.removeEventListener('abort', abort);
        if (failed) reject(failed);
        else resolve(bytes!);
        // grpc-js marks a call cancelled when its stream closes, after an answer too (a handler's
        // signal aborts then): the same here, once the answer is handed over.
        process.nextTick(() => call.cancel());
      };
      // The caller gives up (its signal, or the deadline): the handler sees its call cancelled.
      const giveUp = (f: LocalFailure) => {
        call.cancel();
        end(f);
      };
      const abort = () => giveUp(failure(grpc.status.CANCELLED, 'The call was cancelled by its caller.'));
      const clearTimer = atDeadline(deadline, () => giveUp(failure(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded.')));
      signal?.addEventListener('abort', abort, { once: true });
      detached.runInAsyncScope(() =>
        impl(call, (err, res) => {
          if (err) return end(failure(err.code ?? grpc.status.UNKNOWN, err.details ?? '', trailersOf(err.metadata)));
          let bytes: Buffer;
          try {
            bytes = def.responseSerialize(res);
          } catch {
            return end(failure(grpc.status.INTERNAL, 'Error serializing response'));
          }
          end(null, bytes);
        }),
      );
    });
}

/**
 * Offers a server's unary methods to callers in this process, at the server's address (what the
 * registry hands its clients). Returns the withdrawal: from then on calls go over the wire (to a
 * server that is stopping, which refuses them); calls already running finish, as they do on the
 * wire when the server shuts down.
 */
export function offerInProcess(address: string, definition: Record<string, UnaryDef>, implementation: grpc.UntypedServiceImplementation): () => void {
  const methods = new Map<string, LocalMethod>();
  for (const [name, def] of Object.entries(definition)) {
    if (!def.requestStream && !def.responseStream) methods.set(def.path, localMethodOf(def, implementation[name] as unknown as Impl));
  }
  servers.set(address, methods);
  return () => {
    if (servers.get(address) === methods) servers.delete(address);
  };
}
