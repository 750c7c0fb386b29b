/**
 * The types of the resource methods, derived from the generated OpenAPI types (generated/openapi.ts)
 * and the generated operation table (generated/operations.ts): one input object per call (path,
 * query and header parameters, and the JSON body's fields), the success answer's JSON as output.
 */
import type { operations as Api } from './generated/openapi.js';
import type { operations, resources } from './generated/operations.js';

export type Table = typeof operations;
/** The route id of an operation the SDK offers (`threads.create`). */
export type OperationId = keyof Table & keyof Api;

/** No fields. */
type Empty = Record<never, never>;
type Present<T> = [NonNullable<T>] extends [never] ? Empty : NonNullable<T>;
type Params<K extends OperationId, W extends 'path' | 'query' | 'header'> = Present<Api[K]['parameters'][W]>;
type Camel<S extends string> = S extends `${infer A}-${infer B}` ? `${A}${Capitalize<Camel<B>>}` : S;
/** Header parameters by their camelCase names (`if-match` -> `ifMatch`). */
type HeaderInput<K extends OperationId> = { [H in keyof Params<K, 'header'> as Camel<H & string>]?: Params<K, 'header'>[H] };
type JsonBody<K extends OperationId> = Api[K] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

/** Bytes to send: replayable (retried) when a string, bytes or a Blob; streamed (sent once) otherwise. */
export type UploadBody = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

type BodyInput<K extends OperationId> = Table[K]['body'] extends 'json'
  ? JsonBody<K>
  : Table[K]['body'] extends 'json-nested'
    ? { body: JsonBody<K> }
    : Table[K]['body'] extends 'content'
      ? { content: UploadBody; contentType?: string }
      : Empty;

/** The input of an operation: its path, query and header parameters and its body, in one object. */
export type Input<K extends OperationId> = Params<K, 'path'> & Params<K, 'query'> & HeaderInput<K> & BodyInput<K>;

/** A file's content as the API answered it (drive.read). */
export interface Download {
  status: number;
  /** 304: `ifNoneMatch` named the current version; there is no body. */
  notModified: boolean;
  etag: string | undefined;
  contentType: string | undefined;
  /** Bytes in this answer (`Content-Length`), when known. */
  contentLength: number | undefined;
  /** `Content-Range` of a 206. */
  contentRange: string | undefined;
  /** The bytes, streamed (null for a 304); read it once. */
  body: ReadableStream<Uint8Array> | null;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
}

type Success<K extends OperationId> = Api[K]['responses'][Table[K]['status'] & keyof Api[K]['responses']];
/** The success answer of an operation. */
export type Output<K extends OperationId> = Table[K]['answer'] extends 'bytes'
  ? Download
  : Success<K> extends { content: { 'application/json': infer O } }
    ? O
    : unknown;

/** One item of a paged list operation's answer (`drive.list` -> a drive item). */
export type Item<K extends OperationId> = Table[K]['paged'] extends { items: infer I extends string }
  ? Output<K> extends Record<I, Array<infer T>>
    ? T
    : never
  : never;

export interface CallOptions {
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** The Idempotency-Key of a POST (default: a new one per call, the same across its retries). */
  idempotencyKey?: string;
  /** Retries of this call (default: the client's). */
  maxRetries?: number;
  /** Each attempt's wait for the answer to start, in milliseconds; 0 waits for ever (default: the client's). */
  timeoutMs?: number;
}

export interface StreamOptions {
  signal?: AbortSignal;
  /** Reconnections in a row without receiving an event before the stream gives up (default 10). */
  maxReconnects?: number;
}

/** One server-sent event: `id` (the event's seq; none for a live delta), its type, its data. */
export interface ServerEvent<T> {
  id: string | undefined;
  event: string | undefined;
  data: T;
}

type Call<K extends OperationId> =
  Empty extends Input<K>
    ? (input?: Input<K>, options?: CallOptions) => Promise<Output<K>>
    : (input: Input<K>, options?: CallOptions) => Promise<Output<K>>;
type Paged<K extends OperationId> = Table[K]['paged'] extends null
  ? Empty
  : {
      /** Every item across every page (follows the cursor), for `for await`. */
      all(input?: Input<K>, options?: CallOptions): AsyncIterableIterator<Item<K>>;
    };
type Streamed<K extends OperationId> = Table[K]['events'] extends true
  ? {
      /** A live stream of server-sent events that reconnects after `Last-Event-ID` and never yields an event twice. */
      stream(input: Input<K>, options?: StreamOptions): AsyncIterableIterator<ServerEvent<Item<K>>>;
    }
  : Empty;

/** A resource method: call it, and (for lists) `.all()`, (for event lists) `.stream()`. */
export type Method<K extends OperationId> = Call<K> & Paged<K> & Streamed<K>;

type Bind<T> = { -readonly [P in keyof T]: T[P] extends OperationId ? Method<T[P]> : Bind<T[P]> };
/** The resource tree: `svc.threads.create`, `svc.drive.list`, `svc.trading.orders.get`, ... */
export type Resources = Bind<typeof resources>;
