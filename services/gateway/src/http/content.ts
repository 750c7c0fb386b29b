/**
 * Reading request bodies and writing file content over HTTP: shared by the fronts that move drive
 * content (the API's content operations, WebDAV).
 */
import contentDisposition from 'content-disposition';
import type { Request, Response } from 'express';

import type { Download } from '@svc/dispatch';

import { sendError } from '../replies.js';

// Request helpers -------------------------------------------------------------------------------

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
  const v = req.headers['content-type'];
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

/** Whether a request says it carries a body (a length other than 0, or a chunked one). */
export function hasBody(req: Request): boolean {
  const len = req.headers['content-length'];
  return (len !== undefined && len !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Writes a lent chunk (a Download's, read into a buffer the blob store uses again) and resolves
 * once the socket is done with its bytes (the write's callback), or the response has closed. A
 * write that was taken at once is done at once; one that was not is what a refused write waited
 * for (its 'drain').
 */
export function writeOut(res: Response, chunk: Buffer): Promise<void> {
  return new Promise<void>((ok) => {
    const done = () => {
      res.off('close', done);
      ok();
    };
    res.on('close', done);
    res.write(chunk, done);
  });
}

/** Resolves when a response that refused a write can take more (or has closed). */
export function drained(res: Response): Promise<void> {
  return new Promise<void>((ok) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      ok();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** The most of a refused request's body the gateway reads and drops to keep its connection. */
export const UNREAD_BODY_LIMIT = 64 * 1024 * 1024;

/**
 * After an error answered before the body was read: the answer goes out at once, and the rest of
 * the body is read and dropped, so that a client still sending gets the answer rather than a reset
 * (closing the connection under a sender resets it) and its keep-alive connection serves the next
 * request. A body larger than UNREAD_BODY_LIMIT is not read to its end: the connection is closed.
 */
export function finishUnreadBody(req: Request, res: Response): void {
  if (req.complete || req.destroyed) return;
  let dropped = 0;
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped <= UNREAD_BODY_LIMIT) return;
    req.off('data', onData);
    if (!res.headersSent) res.setHeader('Connection', 'close');
    if (res.writableFinished) req.socket.destroy();
    else res.once('finish', () => req.socket.destroy());
  };
  // A reader that stopped early (an abandoned async iterator) leaves a 'readable' listener, with
  // which the stream never flows: it goes, and the body flows into the drop.
  req.removeAllListeners('readable');
  req.on('data', onData);
  req.on('error', () => {});
  req.resume();
}

/**
 * Answers a Download: 200/206 with the bytes streamed (backpressure both ways), 304 or 416. The
 * drive chose the range (it applies the client's Range header to the file's size).
 */
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
  // The header stays ASCII: an ASCII fallback name, and the real one as UTF-8 in filename*.
  res.setHeader('Content-Disposition', contentDisposition(item.name, { type: 'inline', fallback: item.name.replace(/[^\x20-\x7e]/g, '?') }));
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
      // The chunk is lent: it is written out before the next one is asked for.
      await writeOut(res, chunk);
    }
    res.end();
  } catch {
    // The content failed mid-way (or did not match its hash): the client must see a broken
    // transfer, never a short file that looks complete.
    d.cancel();
    res.destroy();
  }
}
