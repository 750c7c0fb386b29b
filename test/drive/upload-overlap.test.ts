import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { createFsBlobs, createHashPool, DomainError, EARLY_BYTES, type HashPool, storeHashed, type UploadTarget } from '@svc/kit';

import { tempDir } from '../support/backends';

// An upload's bytes start on their way while the drive decides the write (the target comes as a
// promise): on the filesystem they are hashed and written to a temporary file meanwhile, at most
// EARLY_BYTES of them before the decision. A refusal is the answer and nothing stays; a limit
// smaller than the body refuses it; the file is named once the target comes.
const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let root: string;
let pool: HashPool;
beforeEach(() => {
  root = tempDir('svc-overlap-');
  pool = createHashPool({ threads: 1, name: 'overlap-hash' });
});
afterEach(async () => {
  await pool.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Everything the store holds, its temporary folder included. */
function everything(dir = root): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? everything(path.join(dir, e.name)) : [e.name]));
}

/** A source of `bytes` in 256 KiB chunks that counts what was taken from it. */
function counted(bytes: Buffer) {
  const state = { taken: 0 };
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let off = 0; off < bytes.length; off += 256 * 1024) {
      const c = bytes.subarray(off, off + 256 * 1024);
      state.taken += c.length;
      yield c;
      await new Promise((r) => setImmediate(r));
    }
  }
  return { state, chunks: chunks() };
}

function later<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

test('bytes are written while the target is decided, at most EARLY_BYTES of them, and named once it comes', async () => {
  const blobs = createFsBlobs(root);
  const bytes = randomBytes(EARLY_BYTES + 3 * MiB);
  const src = counted(bytes);
  const target = later<UploadTarget>();
  const stored = storeHashed(blobs, pool, target.promise, src.chunks, { declaredSize: bytes.length, staged: true });
  // The source is read up to the early bytes (and the chunk that crossed them), then waits.
  for (let i = 0; i < 200 && src.state.taken <= EARLY_BYTES; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  expect(src.state.taken).toBeGreaterThan(EARLY_BYTES);
  expect(src.state.taken).toBeLessThanOrEqual(EARLY_BYTES + 256 * 1024);
  target.resolve({ key: 'drive-tmp/upl_1', limit: 64 * MiB });
  expect(await stored).toMatchObject({ sha256: sha(bytes), size: bytes.length });
  expect(everything()).toEqual(['upl_1']);
});

test('a refused target is the answer, and nothing stays: neither early in the body nor after it ended', async () => {
  const blobs = createFsBlobs(root);
  const refusal = new DomainError('precondition_failed', 'precondition_failed', 'stale');
  for (const size of [EARLY_BYTES + 2 * MiB, 300 * 1024]) {
    const target = later<UploadTarget>();
    const stored = storeHashed(blobs, pool, target.promise, counted(randomBytes(size)).chunks, { declaredSize: size, staged: true });
    await new Promise((r) => setTimeout(r, 30));
    target.reject(refusal);
    await expect(stored).rejects.toBe(refusal);
    expect(everything()).toEqual([]);
  }
});

test('a body over the limit the target brings is refused as too large, and nothing stays', async () => {
  const blobs = createFsBlobs(root);
  for (const declared of [undefined, 2 * MiB]) {
    const target = later<UploadTarget>();
    const stored = storeHashed(blobs, pool, target.promise, counted(randomBytes(2 * MiB)).chunks, { declaredSize: declared, staged: true });
    // The whole (small) body is in before the target says its limit.
    await new Promise((r) => setTimeout(r, 100));
    target.resolve({ key: 'drive-tmp/upl_2', limit: MiB });
    await expect(stored).rejects.toMatchObject({ code: 'file_too_large' });
    expect(everything()).toEqual([]);
  }
});
