import { createHash } from 'node:crypto';

import type { Blobs } from '@svc/kit';

/**
 * Small site files by SHA-256, in memory. A site file's content never changes under its hash, so
 * nothing here is ever stale: a deploy or a rollback changes which hash a path serves (the drive
 * answers that on every request), never the bytes of a hash. Least recently used goes first when
 * the budget is full.
 */
export class ContentCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(
    /** Bytes held at most. */
    private readonly budget = 32 * 1024 * 1024,
    /** Largest file held; larger ones are streamed. */
    readonly maxFile = 256 * 1024,
  ) {}

  /** The content of `sha256` (`size` bytes), read from `key` on a miss and checked against its hash; undefined if it does not match. */
  async get(blobs: Blobs, key: string, sha256: string, size: number): Promise<Buffer | undefined> {
    const hit = this.entries.get(sha256);
    if (hit) {
      // Most recently used: to the end of the map's order.
      this.entries.delete(sha256);
      this.entries.set(sha256, hit);
      return hit;
    }
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of await blobs.get(key)) {
      read += (chunk as Buffer).length;
      if (read > size) return undefined;
      chunks.push(chunk as Buffer);
    }
    const content = Buffer.concat(chunks, read);
    if (read !== size || createHash('sha256').update(content).digest('hex') !== sha256) return undefined;
    this.entries.set(sha256, content);
    this.bytes += content.length;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(k);
      this.bytes -= v.length;
    }
    return content;
  }
}
