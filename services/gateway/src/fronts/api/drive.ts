import type { Request, Response } from 'express';

import type { RouteInput } from '@svc/api';
import { driveItem } from '@svc/api/dist/routes/drive.js';
import { type Caller, type ContentDeps, upload, download } from '@svc/dispatch';
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import type { LocalHandler } from '../../app.js';
import type { AuthContext } from '../../auth.js';
import { bodyOf, contentTypeOf, declaredLength, finishUnreadBody, meaningfulType, sendContent } from '../../http/content.js';
import { sendDomainError, sendReply } from '../../replies.js';

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
export function driveHandlers(deps: ContentDeps): Record<string, LocalHandler> {
  const uploadHandler: LocalHandler = async (req, res, input, auth) => {
    const raw = req.headers['content-type'];
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
      range: input.headers.range,
      ifNoneMatch: input.headers['if-none-match'],
      ifRange: input.headers['if-range'],
      headOnly: head,
    });
    await sendContent(req, res, d, { head });
  };

  return { 'drive.upload': uploadHandler, 'drive.replace': replaceHandler, 'drive.read': readHandler };
}

