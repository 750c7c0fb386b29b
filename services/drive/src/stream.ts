import {
  decodeBytesMessage,
  DomainError,
  encodeBytesMessage,
  grpcStatusFor,
  type HashPool,
  type Logger,
  type PrincipalSigner,
  rawHandler,
  type sendUnaryData,
  type ServerReadableStream,
  type ServerWritableStream,
  type StreamingHash,
  verifyCallPrincipal,
} from '@svc/kit';
import { drive } from '@svc/proto';

import type { DriveDomain, DownloadResult, UploadHeader } from './drive.js';
import { toItem } from './server.js';

/** Bytes per Download message: large enough to keep per-message work small, far below gRPC's 4 MiB. */
export const DOWNLOAD_CHUNK_BYTES = 256 * 1024;

/** A chunk message given as pieces, framed in one copy by the codec below. */
export interface ChunkParts {
  parts: Buffer[];
  size: number;
}

/**
 * The service definition with codecs for the bulk messages: an Upload chunk is read as a view of
 * the received buffer, a Download chunk is framed from its pieces in one copy. Every other message
 * uses the generated codec.
 */
export const definition = {
  ...drive.DriveServiceService,
  upload: {
    ...drive.DriveServiceService.upload,
    requestDeserialize: (b: Buffer): drive.UploadRequest => {
      const chunk = decodeBytesMessage(b, 2);
      return chunk ? { chunk } : drive.UploadRequest.decode(b);
    },
  },
  download: {
    ...drive.DriveServiceService.download,
    responseSerialize: (m: drive.DownloadResponse | ChunkParts): Buffer =>
      'parts' in m ? encodeBytesMessage(2, m.parts, m.size) : Buffer.from(drive.DownloadResponse.encode(m).finish()),
  },
};

function header(h: drive.UploadHeader): UploadHeader {
  return {
    itemId: h.itemId || undefined,
    parentId: h.parentId || undefined,
    name: h.name,
    projectId: h.projectId || undefined,
    contentType: h.contentType || undefined,
    declaredSize: h.declaredSize,
    ifMatch: h.ifMatch,
    ifNoneMatch: h.ifNoneMatch,
    requirePrecondition: h.requirePrecondition,
    overwrite: h.overwrite,
    lockTokens: h.lockTokens,
  };
}

/** Resolves when the call can take more, rejects when the client went away. */
function drained(call: ServerWritableStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      cleanup();
      resolve();
    };
    const gone = () => {
      cleanup();
      reject(new Error('the client went away'));
    };
    const cleanup = () => {
      call.off('drain', done);
      call.off('cancelled', gone);
      call.off('close', gone);
    };
    call.on('drain', done);
    call.on('cancelled', gone);
    call.on('close', gone);
  });
}

/**
 * The streaming methods, as grpc-js handlers: the principal is verified as for unary calls and
 * errors travel as DomainError kinds and codes.
 */
export function streamHandlers(domain: DriveDomain, deps: { signer: PrincipalSigner; log: Logger; hashes: HashPool }) {
  /** Upload: a header, chunks, an end marker with the byte count; anything else is an aborted upload. */
  const upload = rawHandler(
    (call: ServerReadableStream<drive.UploadRequest, drive.ItemResponse>, callback: sendUnaryData<drive.ItemResponse>) => {
      let log = deps.log;
      const run = async () => {
        const ctx = await verifyCallPrincipal(call.metadata, deps);
        log = ctx.log;
        const messages = call[Symbol.asyncIterator]() as AsyncIterator<drive.UploadRequest>;
        const first = await messages.next();
        if (first.done || !first.value.header) {
          throw new DomainError('invalid_argument', 'invalid_upload', 'An upload starts with its header.');
        }
        async function* chunks(): AsyncGenerator<Buffer> {
          let size = 0;
          for (;;) {
            const next = await messages.next();
            if (next.done) break;
            const m = next.value;
            if (m.chunk) {
              size += m.chunk.length;
              yield m.chunk;
            } else if (m.end) {
              if (m.end.size !== size) {
                throw new DomainError('invalid_argument', 'upload_incomplete', `The upload ended after ${size} of ${m.end.size} bytes.`);
              }
              return;
            }
          }
          throw new DomainError('invalid_argument', 'upload_incomplete', 'The upload stopped before its end; nothing was written.');
        }
        const { row, created } = await domain.upload(ctx.principal, header(first.value.header), chunks());
        return { item: toItem({ row }), created };
      };
      run().then(
        (res) => callback(null, res),
        (err: unknown) => {
          if (call.cancelled) return;
          callback(grpcStatusFor(err, log, 'upload') as Parameters<typeof callback>[0]);
        },
      );
    },
  );

  /** Download: a header, then the bytes; a full read is hashed on the way and fails if it does not match. */
  const download = rawHandler((call: ServerWritableStream<drive.DownloadRequest, drive.DownloadResponse>) => {
    let log = deps.log;
    let result: DownloadResult | undefined;
    let hashing: StreamingHash | null = null;
    const run = async () => {
      const ctx = await verifyCallPrincipal(call.metadata, deps);
      log = ctx.log;
      const q = call.request;
      result = await domain.download(ctx.principal, {
        id: q.id,
        rangeStart: q.rangeStart,
        rangeEnd: q.rangeEnd,
        suffixLength: q.suffixLength,
        ifNoneMatch: q.ifNoneMatch,
        ifRange: q.ifRange,
        headOnly: q.headOnly,
      });
      const r = result;
      if (!call.write({ header: { item: toItem({ row: r.item }), notModified: r.notModified, partial: r.partial, rangeNotSatisfiable: r.rangeNotSatisfiable, start: r.start, end: r.end } })) {
        await drained(call);
      }
      if (r.body) {
        // Hashed as uploads are (on a worker thread, unless the file is small); checked before the call ends.
        const hash = r.partial ? null : deps.hashes.hash('sha256', r.item.size);
        hashing = hash;
        let sent = 0;
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const flush = async () => {
          const message: ChunkParts = { parts: pending, size: pendingBytes };
          pending = [];
          pendingBytes = 0;
          if (!call.write(message as drive.DownloadResponse)) await drained(call);
        };
        for await (const chunk of r.body as AsyncIterable<Buffer>) {
          if (call.cancelled) break;
          const behind = hash?.update(chunk);
          if (behind) await behind;
          sent += chunk.length;
          pending.push(chunk);
          pendingBytes += chunk.length;
          if (pendingBytes >= DOWNLOAD_CHUNK_BYTES) await flush();
        }
        if (call.cancelled) {
          hash?.abort();
          return;
        }
        if (pendingBytes) await flush();
        const expected = r.end - r.start + 1;
        const digest = hash ? await hash.digest() : null;
        if (sent !== expected || (hash && digest !== r.item.sha256)) {
          // Never let a damaged blob pass as the file: the reader sees a failed transfer.
          log.error({ id: r.item.id, sha256: r.item.sha256, sent, expected }, 'stored content does not match its metadata');
          throw new DomainError('internal', 'content_damaged', 'The stored content does not match the file; it was not served.');
        }
      }
      call.end();
    };
    run().catch((err: unknown) => {
      hashing?.abort();
      result?.body?.destroy();
      if (call.cancelled) return;
      call.emit('error', grpcStatusFor(err, log, 'download'));
    });
  });

  return { upload, download };
}
