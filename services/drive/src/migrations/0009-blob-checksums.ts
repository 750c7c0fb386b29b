import type { Migration } from '@svc/kit';

/**
 * A blob's CRC-32 (zlib's; docs/drive.md, "Reads are checked"): computed by the gateway in the
 * same pass as the SHA-256 when the content is uploaded (or by the drive when it writes content
 * itself), kept with the blob so that every item, version, copy and site file of that content
 * shares it. A full read is checked against it instead of the SHA-256, which is several times
 * slower. NULL for content stored before it existed: reads of it are checked by SHA-256, and the
 * next upload of the same bytes fills it in.
 */
export const blobChecksums: Migration = {
  id: '0009_blob_checksums',
  sql: `ALTER TABLE drive.blobs ADD COLUMN crc32 bigint CHECK (crc32 BETWEEN 0 AND 4294967295);`,
};
