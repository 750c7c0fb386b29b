import type { Readable } from 'node:stream';

import type * as Minio from 'minio';

/** Content at most this large goes in one PUT; larger content in parts of this size (one held in memory). */
export const S3_PART_BYTES = 16 * 1024 * 1024;

/**
 * Sends a stream to S3 with the plain multipart API: CreateMultipartUpload, UploadPart for each
 * part in order, CompleteMultipartUpload; a stream that fits one part goes in one PutObject.
 *
 * Not the minio client's own `putObject(stream)`: before a multipart upload it lists the bucket's
 * unfinished uploads (ListMultipartUploads) to resume one of the same key, which S3 peers such as
 * s3rver do not implement (every upload over one part failed there) and which would let two uploads
 * of one key mix their parts. Here each upload is its own; on any failure (the source ended early
 * or failed, the store refused a part) the multipart upload is aborted, so no object and no parts
 * are left, and the error is thrown.
 *
 * Memory: one part (16 MiB) per upload. `retry` wraps the requests that carry a buffer (they may be
 * sent again); the source stream itself is read once.
 */
export async function putStream(
  client: Minio.Client,
  bucket: string,
  key: string,
  body: Readable,
  retry: <T>(request: () => Promise<T>) => Promise<T>,
): Promise<void> {
  let uploadId: string | undefined;
  const etags: { part: number; etag: string }[] = [];
  const sendPart = async (part: Buffer) => {
    const number = etags.length + 1;
    const id = uploadId!;
    const res = await retry(() =>
      client.uploadPart({ bucketName: bucket, objectName: key, uploadID: id, partNumber: number, headers: { 'Content-Length': part.length } }, part),
    );
    etags.push({ part: number, etag: res.etag });
  };
  try {
    let held: Buffer[] = [];
    let heldBytes = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      let rest = chunk;
      while (heldBytes + rest.length >= S3_PART_BYTES) {
        const take = S3_PART_BYTES - heldBytes;
        held.push(rest.subarray(0, take));
        rest = rest.subarray(take);
        const part = Buffer.concat(held, S3_PART_BYTES);
        held = [];
        heldBytes = 0;
        uploadId ??= await retry(() => client.initiateNewMultipartUpload(bucket, key, {}));
        await sendPart(part);
      }
      if (rest.length > 0) {
        held.push(rest);
        heldBytes += rest.length;
      }
    }
    const last = Buffer.concat(held, heldBytes);
    if (uploadId === undefined) {
      await retry(() => client.putObject(bucket, key, last, last.length));
      return;
    }
    if (last.length > 0) await sendPart(last);
    await client.completeMultipartUpload(bucket, key, uploadId, etags);
  } catch (err) {
    if (uploadId !== undefined) {
      const id = uploadId;
      await client.abortMultipartUpload(bucket, key, id).catch(() => {});
    }
    throw err;
  }
}
