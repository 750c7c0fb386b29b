import type express from 'express';
import type { Request, Response } from 'express';

import type { RouteInput } from '@svc/api';
import { driveItem } from '@svc/api/dist/routes/drive.js';
import { DomainError, type Registry, storeHashed, verifiedContent } from '@svc/kit';
import { drive } from '@svc/proto';

import type { LocalHandler } from '../app.js';
import type { AuthContext } from '../auth.js';
import { sendDomainError, sendError, sendReply } from '../replies.js';
import type { LocalDeps } from './index.js';

const SERVICE = 'svc.drive.v1.DriveService';
/** A commit may move a large blob (a server-side copy on S3): more time than a usual call. */
const COMMIT_DEADLINE_MS = 120_000;

// Content through the gateway --------------------------------------------------------------------
// Bytes never pass through the drive service: it checks a write and names a temporary blob key,
// the gateway streams the client's bytes to that key (hashed on the way), and the service commits
// the new version (or forgets the upload). Reads are the same: the service answers with the
// version and range, the gateway streams them from the blob store and checks the hash.

/** The drive client. */
export function driveClient(registry: Registry) {
  return registry.client('drive', drive.DriveServiceService, SERVICE);
}

export interface Caller {
  token: string;
  requestId: string;
}

/**
 * Writes `chunks` as a file's content: BeginUpload (a failed precondition answers before any
 * byte is read), the bytes to the blob store, then CommitUpload. A source that fails (a client
 * gone mid-body) or goes over the limit leaves nothing, and the upload is forgotten.
 */
export async function upload(deps: LocalDeps, caller: Caller, header: drive.UploadHeader, chunks: AsyncIterable<Buffer>): Promise<drive.ItemResponse> {
  const client = driveClient(deps.registry);
  const call = { principalToken: caller.token, requestId: caller.requestId };
  const slot = await client.beginUpload(header, call);
  let stored;
  try {
    stored = await storeHashed(await deps.backends.blobs(), deps.hashes, slot.blobKey, chunks, {
      limit: slot.limitBytes,
      declaredSize: header.declaredSize,
    });
  } catch (err) {
    client.abortUpload({ uploadId: slot.uploadId }, call).catch((e: unknown) => deps.log.warn({ err: e, uploadId: slot.uploadId }, 'could not abort an upload'));
    if (err instanceof DomainError) throw err;
    // Not the client's doing (a full disk, an S3 error, a failed hash): nothing was written.
    deps.log.error({ err, uploadId: slot.uploadId, key: slot.blobKey, requestId: caller.requestId }, 'storing an upload failed');
    throw new DomainError('unavailable', 'storage_unavailable', 'The file store could not take the content; nothing was written.', undefined, { cause: err });
  }
  return client.commitUpload({ header, uploadId: slot.uploadId, sha256: stored.sha256, size: stored.size }, { ...call, deadlineMs: COMMIT_DEADLINE_MS });
}

export interface Download {
  header: drive.DownloadHeader;
  /** The bytes, when the answer has any (verified against the file's hash on a full read). */
  body?: AsyncIterable<Buffer>;
  /** Stops reading (the client went away); nothing is held after it. */
  cancel(): void;
}

/** Asks the drive what to serve, and opens the blob when there are bytes to send. */
export async function download(deps: LocalDeps, caller: Caller, request: drive.DownloadRequest): Promise<Download> {
  const opened = await driveClient(deps.registry).openContent(request, { principalToken: caller.token, requestId: caller.requestId });
  const header = opened.header;
  if (!header?.item) throw new DomainError('internal', 'upstream_error', 'The drive answered without the file.');
  if (!opened.blobKey) return { header, cancel: () => {} };
  const item = header.item;
  const range = header.partial ? { start: header.start, end: header.end } : undefined;
  const where = { id: item.id, sha256: item.sha256, key: opened.blobKey, requestId: caller.requestId };
  let blob;
  try {
    blob = await (await deps.backends.blobs()).get(opened.blobKey, range);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'NoSuchKey' || code === 'NotFound') {
      // A committed file whose blob is gone: content was lost, the operator must hear of it.
      deps.log.error({ err, ...where }, 'the content of a file is missing from the blob store');
      throw new DomainError('internal', 'content_missing', "The file's content could not be read.", undefined, { cause: err });
    }
    throw new DomainError('unavailable', 'storage_unavailable', "The file store is unavailable; try again.", undefined, { cause: err });
  }
  const verified = verifiedContent(blob, deps.hashes, { bytes: header.end - header.start + 1, sha256: header.partial ? undefined : item.sha256 });
  async function* logged(): AsyncGenerator<Buffer> {
    try {
      yield* verified;
    } catch (err) {
      // The reader sees a broken transfer; the operator must hear why.
      const damaged = err instanceof DomainError && err.code === 'content_damaged';
      deps.log.error({ err, ...where }, damaged ? 'stored content does not match its file' : "reading a file's content failed");
      throw err;
    }
  }
  const body = logged();
  return {
    header,
    body,
    cancel: () => {
      blob.destroy();
      void body.return(undefined);
    },
  };
}

// Request helpers -------------------------------------------------------------------------------

/** Header that keeps the client's Content-Type of a raw body the JSON parser must not read. */
export const ORIGINAL_CONTENT_TYPE = 'x-svc-raw-content-type';

/**
 * Content routes take any body as opaque bytes, JSON included: the content type is set aside
 * before the JSON parser runs, so a `.json` file is stored as sent rather than parsed.
 */
export function protectRawBodies(app: express.Express): void {
  app.use((req, _res, next) => {
    const ct = req.headers['content-type'];
    if (
      ct &&
      ((req.method === 'POST' && /^\/drive\/upload\/?(\?|$)/.test(req.url)) ||
        (req.method === 'PUT' && /^\/drive\/[^/]+\/content\/?(\?|$)/.test(req.url)))
    ) {
      req.headers[ORIGINAL_CONTENT_TYPE] = ct;
      req.headers['content-type'] = 'application/octet-stream';
    }
    next();
  });
}

/**
 * The content type a client declared for the bytes it sends, if it said anything meaningful:
 * generic types (octet-stream, curl's default form type) leave the drive to guess from the name.
 */
export function meaningfulType(v: string | undefined): string | undefined {
  if (!v) return undefined;
  const base = v.split(';')[0]!.trim().toLowerCase();
  return base === 'application/octet-stream' || base === 'application/x-www-form-urlencoded' ? undefined : v;
}

export function contentTypeOf(req: Request): string | undefined {
  const v = req.headers[ORIGINAL_CONTENT_TYPE] ?? req.headers['content-type'];
  return typeof v === 'string' ? meaningfulType(v) : undefined;
}

/** The request body as chunks; stopping early leaves the request open (to answer, then drain it). */
export function bodyOf(req: Request): AsyncIterable<Buffer> {
  return req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
}

export function declaredLength(req: Request): number | undefined {
  const v = req.headers['content-length'];
  return typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
}

/** `bytes=a-b`, `bytes=a-`, `bytes=-n`: one range; anything else is ignored (the whole content). */
export function parseRange(v: string | undefined): Pick<drive.DownloadRequest, 'rangeStart' | 'rangeEnd' | 'suffixLength'> {
  const m = v && /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(v);
  if (!m || (m[1] === '' && m[2] === '')) return {};
  if (m[1] === '') return { suffixLength: Number(m[2]) };
  const start = Number(m[1]);
  const end = m[2] === '' ? undefined : Number(m[2]);
  if (end !== undefined && end < start) return {};
  if (!Number.isSafeInteger(start) || (end !== undefined && !Number.isSafeInteger(end))) return {};
  return { rangeStart: start, rangeEnd: end };
}

/**
 * After an error answered before the body was read: read and drop the rest (bounded), so that
 * the client sees the answer rather than a reset connection, then close.
 */
export function finishUnreadBody(req: Request, res: Response): void {
  if (req.complete || req.destroyed) return;
  res.setHeader('Connection', 'close');
  let dropped = 0;
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > 64 * 1024 * 1024) req.destroy();
  };
  req.on('data', onData);
  req.on('error', () => {});
  req.resume();
}

// multipart/form-data ---------------------------------------------------------------------------

const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * A streaming multipart/form-data reader: parts come one at a time, and a part's body streams
 * in pieces (nothing is held beyond a boundary's length), so a file part can be any size.
 */
export class MultipartReader {
  private buf: Buffer;
  private readonly delim: Buffer;
  private readonly source: AsyncIterator<Buffer>;
  private ended = false;

  constructor(stream: AsyncIterable<Buffer>, boundary: string) {
    this.delim = Buffer.from(`\r\n--${boundary}`);
    this.source = stream[Symbol.asyncIterator]();
    // The first boundary has no CRLF before it; with one prepended every boundary looks alike.
    this.buf = Buffer.from('\r\n');
  }

  static boundaryOf(contentType: string | undefined): string | undefined {
    const m = contentType && /^multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
    return m ? (m[1] ?? m[2]) : undefined;
  }

  private async more(): Promise<boolean> {
    if (this.ended) return false;
    const n = await this.source.next();
    if (n.done) {
      this.ended = true;
      return false;
    }
    this.buf = this.buf.length ? Buffer.concat([this.buf, n.value]) : n.value;
    return true;
  }

  private malformed(why: string): DomainError {
    return new DomainError('invalid_argument', 'invalid_multipart', `The multipart body is malformed: ${why}.`);
  }

  /** The next part's headers (lowercase names), or null after the closing boundary. */
  async nextPart(): Promise<Record<string, string> | null> {
    // Skip to the next boundary (the preamble, or what is left of an unread part).
    for (;;) {
      const i = this.buf.indexOf(this.delim);
      if (i >= 0) {
        this.buf = this.buf.subarray(i + this.delim.length);
        break;
      }
      this.buf = this.buf.subarray(Math.max(0, this.buf.length - this.delim.length + 1));
      if (!(await this.more())) throw this.malformed('no boundary');
    }
    while (this.buf.length < 2) if (!(await this.more())) throw this.malformed('cut after a boundary');
    if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) return null; // "--": the closing boundary
    let end: number;
    while ((end = this.buf.indexOf(CRLF2)) < 0) {
      if (this.buf.length > 16 * 1024) throw this.malformed('part headers too long');
      if (!(await this.more())) throw this.malformed('cut in part headers');
    }
    const lines = this.buf.subarray(0, end).toString('utf8').split('\r\n');
    this.buf = this.buf.subarray(end + 4);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    return headers;
  }

  /** The current part's body, in pieces, up to the next boundary. */
  async *body(): AsyncGenerator<Buffer> {
    for (;;) {
      const i = this.buf.indexOf(this.delim);
      if (i >= 0) {
        if (i > 0) yield this.buf.subarray(0, i);
        this.buf = this.buf.subarray(i);
        return;
      }
      const safe = this.buf.length - this.delim.length + 1;
      if (safe > 0) {
        yield this.buf.subarray(0, safe);
        this.buf = this.buf.subarray(safe);
      }
      if (!(await this.more())) throw this.malformed('cut in a part');
    }
  }

  async text(limit: number): Promise<string> {
    const parts: Buffer[] = [];
    let n = 0;
    for await (const b of this.body()) {
      n += b.length;
      if (n > limit) throw this.malformed('a field is too long');
      parts.push(b);
    }
    return Buffer.concat(parts).toString('utf8');
  }
}

/** `form-data; name="file"; filename="a.txt"` → its parameters (filename* decoded). */
export function dispositionParams(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!v) return out;
  const re = /;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(v))) {
    const key = m[1]!.toLowerCase();
    let val = m[2]!.trim();
    if (val.startsWith('"')) val = val.slice(1, -1).replace(/\\(.)/g, '$1');
    if (key.endsWith('*')) {
      const ext = /^([\w-]+)'[^']*'(.*)$/.exec(val);
      if (ext) {
        try {
          out[key.slice(0, -1)] = decodeURIComponent(ext[2]!);
        } catch {
          // keep the plain parameter
        }
      }
      continue;
    }
    out[key] ??= val;
  }
  return out;
}

// HTTP handlers ---------------------------------------------------------------------------------

function caller(req: Request, auth: AuthContext | undefined): Caller {
  return { token: auth!.token, requestId: req.requestId };
}

function sendItem(res: Response, item: drive.Item, status: number): void {
  const headers: Record<string, string> = { ETag: item.etag };
  if (status === 201) headers.Location = `/v1/drive/${item.id}`;
  sendReply(res, status, headers, driveItem(item));
}

/** A failed write: the error body (with the current ETag as a header on a 412), then the unread body dropped. */
function sendWriteError(req: Request, res: Response, err: unknown): void {
  if (!(err instanceof DomainError)) throw err;
  const etag = err.details?.etag;
  if (err.httpStatus === 412 && typeof etag === 'string') res.setHeader('ETag', etag);
  finishUnreadBody(req, res);
  sendDomainError(req, res, err);
}

const preconditions = (input: RouteInput) => ({
  ifMatch: input.headers['if-match'] as string | undefined,
  ifNoneMatch: input.headers['if-none-match'] as string | undefined,
});

/** The drive's routes served by the gateway: content in and out, streamed. */
export function driveHandlers(deps: LocalDeps): Record<string, LocalHandler> {
  const uploadHandler: LocalHandler = async (req, res, input, auth) => {
    const raw = req.headers[ORIGINAL_CONTENT_TYPE] ?? req.headers['content-type'];
    const boundary = MultipartReader.boundaryOf(typeof raw === 'string' ? raw : undefined);
    const ct = contentTypeOf(req);
    const base: drive.UploadHeader = {
      parentId: input.query.parentId,
      name: input.query.name,
      projectId: input.query.projectId,
      ...preconditions(input),
      requirePrecondition: false,
      overwrite: false,
      lockTokens: [],
    };
    let result: drive.ItemResponse;
    try {
      if (boundary) {
        const form = new MultipartReader(bodyOf(req), boundary);
        const fields: Record<string, string> = {};
        let file: { filename: string; contentType?: string } | undefined;
        for (let headers = await form.nextPart(); headers; headers = await form.nextPart()) {
          const d = dispositionParams(headers['content-disposition']);
          if (d.filename !== undefined) {
            file = { filename: d.filename, contentType: meaningfulType(headers['content-type']) };
            break;
          }
          if (d.name && Object.keys(fields).length < 20) fields[d.name] = await form.text(4096);
        }
        if (!file) throw new DomainError('invalid_argument', 'missing_file', 'The form has no file part.');
        const name = input.query.name ?? fields.name ?? file.filename;
        const parentId = input.query.parentId ?? (fields.parentId || undefined);
        if (parentId !== undefined && !/^fld_[0-9a-z]{26}$/.test(parentId)) {
          throw new DomainError('invalid_argument', 'invalid_request', 'parentId: must be a folder id (fld_…)');
        }
        result = await upload(
          deps,
          caller(req, auth),
          { ...base, name, parentId, projectId: input.query.projectId ?? (fields.projectId || undefined), contentType: file.contentType },
          form.body(),
        );
      } else {
        if (!input.query.name) throw new DomainError('invalid_argument', 'invalid_request', 'query.name: a file name is required (?name=).');
        result = await upload(deps, caller(req, auth), { ...base, contentType: ct, declaredSize: declaredLength(req) }, bodyOf(req));
      }
    } catch (err) {
      return sendWriteError(req, res, err);
    }
    sendItem(res, result.item!, result.created ? 201 : 200);
  };

  const replaceHandler: LocalHandler = async (req, res, input, auth) => {
    const pre = preconditions(input);
    let result: drive.ItemResponse;
    try {
      result = await upload(
        deps,
        caller(req, auth),
        {
          itemId: input.params.id,
          contentType: contentTypeOf(req),
          declaredSize: declaredLength(req),
          ...pre,
          requirePrecondition: true,
          overwrite: false,
          lockTokens: [],
        },
        bodyOf(req),
      );
    } catch (err) {
      return sendWriteError(req, res, err);
    }
    sendItem(res, result.item!, 200);
  };

  const readHandler: LocalHandler = async (req, res, input, auth) => {
    const head = req.method === 'HEAD';
    const d = await download(deps, caller(req, auth), {
      id: input.params.id,
      ...parseRange(input.headers.range),
      ifNoneMatch: input.headers['if-none-match'],
      ifRange: input.headers['if-range'],
      headOnly: head,
    });
    await sendContent(req, res, d, { head });
  };

  return { 'drive.upload': uploadHandler, 'drive.replace': replaceHandler, 'drive.read': readHandler };
}

/** Answers a Download: 200/206 with the bytes streamed (backpressure both ways), 304 or 416. */
export async function sendContent(req: Request, res: Response, d: Download, opts: { head: boolean }): Promise<void> {
  const h = d.header;
  const item = h.item!;
  res.setHeader('ETag', item.etag);
  res.setHeader('Last-Modified', new Date(item.updatedAt).toUTCString());
  res.setHeader('Cache-Control', 'private, no-cache');
  res.setHeader('Accept-Ranges', 'bytes');
  if (h.notModified) {
    d.cancel();
    res.status(304).end();
    return;
  }
  if (h.rangeNotSatisfiable) {
    d.cancel();
    res.setHeader('Content-Range', `bytes */${item.size}`);
    return sendError(req, res, 416, 'range_not_satisfiable', `The range is outside the file's ${item.size} bytes.`);
  }
  // User content is never interpreted by a browser on the API's origin.
  res.setHeader('Content-Type', item.contentType || 'application/octet-stream');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
  res.setHeader('Content-Disposition', `inline; filename*=UTF-8''${encodeURIComponent(item.name)}`);
  res.setHeader('Content-Length', String(h.end - h.start + 1 > 0 ? h.end - h.start + 1 : 0));
  if (h.partial) {
    res.setHeader('Content-Range', `bytes ${h.start}-${h.end}/${item.size}`);
    res.status(206);
  } else {
    res.status(200);
  }
  if (opts.head || !d.body) {
    d.cancel();
    res.end();
    return;
  }
  let clientGone = false;
  res.on('close', () => {
    if (!res.writableFinished) {
      clientGone = true;
      d.cancel();
    }
  });
  try {
    for await (const chunk of d.body) {
      if (clientGone) return;
      if (!res.write(chunk)) {
        await new Promise<void>((ok) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            ok();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      }
    }
    res.end();
  } catch {
    // The content failed mid-way (or did not match its hash): the client must see a broken
    // transfer, never a short file that looks complete.
    d.cancel();
    res.destroy();
  }
}
