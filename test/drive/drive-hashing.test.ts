import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import zlib from 'node:zlib';

import { createHashPool, type HashPool, type StreamingHash } from '@svc/kit';

// The drive's hashing off the event loop (the kit's hash pool): the digest of a stream of chunks
// on a worker thread must be exactly SHA-256 of the bytes, whatever the chunking, however many
// hashes share a worker, and a failure (an aborted upload, a crashed worker) must never hang.
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Feeds `bytes` in pieces of the given sizes (cycling), waiting whenever the hash asks to. */
async function feed(h: StreamingHash, bytes: Buffer, sizes: number[]): Promise<void> {
  let i = 0;
  for (let off = 0; off < bytes.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, bytes.length - off);
    const behind = h.update(bytes.subarray(off, off + n));
    if (behind) await behind;
    off += n;
  }
}

describe('hash pool', () => {
  let pool: HashPool;
  beforeAll(() => {
    pool = createHashPool({ threads: 1, name: 'test-hash' });
  });
  afterAll(() => pool.close());

  test('the digest is SHA-256 of the bytes, for any chunking', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const chunkings = [[1], [7], [1000], [65536], [256 * 1024 - 1], [256 * 1024], [256 * 1024 + 1], [1024 * 1024], [3, 300_000, 5, 70_000, 1]];
    for (const sizes of chunkings) {
      // Single bytes only over a prefix (a million awaits would be slow, not more telling).
      const input = sizes[0] === 1 && sizes.length === 1 ? bytes.subarray(0, 100_000) : bytes;
      const h = pool.hash();
      await feed(h, input, sizes);
      expect(await h.digest()).toBe(sha(input));
    }
  });

  test('no bytes hash as the empty content', async () => {
    expect(await pool.hash().digest()).toBe(sha(Buffer.alloc(0)));
    const h = pool.hash();
    expect(h.update(Buffer.alloc(0))).toBeUndefined();
    expect(await h.digest()).toBe(sha(Buffer.alloc(0)));
  });

  test('the bytes are copied: the caller may reuse its buffer at once', async () => {
    const reused = Buffer.alloc(100_000);
    const all: Buffer[] = [];
    const h = pool.hash();
    for (let i = 0; i < 40; i++) {
      reused.fill(i);
      all.push(Buffer.from(reused));
      const behind = h.update(reused);
      if (behind) await behind;
    }
    expect(await h.digest()).toBe(sha(Buffer.concat(all)));
  });

  test('concurrent hashes on one worker do not mix', async () => {
    const inputs = Array.from({ length: 8 }, (_, i) => randomBytes(1024 * 1024 + i * 4099));
    const digests = await Promise.all(
      inputs.map(async (bytes, i) => {
        const h = pool.hash();
        await feed(h, bytes, [4096 * (i + 1), 100_003]);
        return h.digest();
      }),
    );
    expect(digests).toEqual(inputs.map(sha));
  });

  test('several algorithms hash the same bytes (copied once): SHA-256 and the CRC-32 of zlib, as 8 hex digits', async () => {
    const crc = (b: Uint8Array) => zlib.crc32(b).toString(16).padStart(8, '0');
    for (const bytes of [randomBytes(2 * 1024 * 1024 + 5), Buffer.alloc(0), Buffer.from('hello')]) {
      const both = pool.hash(['sha256', 'crc32']);
      await feed(both, bytes, [100_003, 65536]);
      expect(await both.digests()).toEqual([sha(bytes), crc(bytes)]);
      const alone = pool.hash('crc32');
      await feed(alone, bytes, [7777]);
      expect(await alone.digest()).toBe(crc(bytes));
      // On the calling thread (a small content), the same digests.
      const inline = pool.hash(['sha256', 'crc32'], 0);
      void inline.update(bytes); // on the calling thread: nothing to wait for
      expect(await inline.digests()).toEqual([sha(bytes), crc(bytes)]);
    }
  });

  test('an algorithm that does not exist is refused at once', () => {
    expect(() => pool.hash('no-such-hash')).toThrow(/unknown hash algorithm/);
    expect(() => pool.hash(['sha256', 'no-such-hash'])).toThrow(/unknown hash algorithm/);
    expect(() => pool.hash([])).toThrow(/no hash algorithm/);
  });

  test('a finished hash refuses more bytes; digest twice is refused', async () => {
    const h = pool.hash();
    void h.update(Buffer.from('abc')); // fits in its slots: nothing to wait for
    expect(await h.digest()).toBe(sha(Buffer.from('abc')));
    expect(() => h.update(Buffer.from('x'))).toThrow(/ended/);
    await expect(h.digest()).rejects.toThrow(/ended/);
  });
});

test('a content the caller says is small is hashed on its own thread (no worker), with the same interface', async () => {
  const pool = createHashPool({ inlineBytes: 64 * 1024 });
  try {
    const small = randomBytes(64 * 1024);
    const h = pool.hash('sha256', small.length);
    await feed(h, small, [1000]);
    expect(await h.digest()).toBe(sha(small));
    expect(() => h.update(Buffer.from('x'))).toThrow(/ended/);
    pool.hash('sha256', 10).abort();
    expect(pool.workers).toHaveLength(0);
    // Larger (or of unknown size): on a worker.
    const large = randomBytes(64 * 1024 + 1);
    const w = pool.hash('sha256', large.length);
    await feed(w, large, [5000]);
    expect(await w.digest()).toBe(sha(large));
    expect(pool.workers).toHaveLength(1);
  } finally {
    await pool.close();
  }
});

describe('hash pool: backpressure, aborts and failures', () => {
  test('with little shared memory, updates wait for the worker and the digests stay right', async () => {
    // 4 slots of 1 KiB: every few KiB the writer must wait for the worker.
    const pool = createHashPool({ threads: 1, slots: 4, slotBytes: 1024, slotsPerHash: 2 });
    try {
      const bytes = randomBytes(512 * 1024);
      const h = pool.hash();
      let waits = 0;
      for (let off = 0; off < bytes.length; off += 10_000) {
        const behind = h.update(bytes.subarray(off, off + 10_000));
        if (behind) {
          waits++;
          // One chunk at a time: another update before this one is taken is refused.
          expect(() => h.update(Buffer.from('x'))).toThrow(/before the previous chunk/);
          await behind;
        }
      }
      expect(waits).toBeGreaterThan(0);
      expect(await h.digest()).toBe(sha(bytes));
      // Two hashes sharing the 4 slots still both finish.
      const a = randomBytes(200_000);
      const b = randomBytes(300_000);
      const [ha, hb] = [pool.hash(), pool.hash()];
      const [da, db] = await Promise.all([feed(ha, a, [3000]).then(() => ha.digest()), feed(hb, b, [5000]).then(() => hb.digest())]);
      expect([da, db]).toEqual([sha(a), sha(b)]);
    } finally {
      await pool.close();
    }
  });

  test('an aborted hash gives its memory back and frees its state; a waiting update rejects', async () => {
    const pool = createHashPool({ threads: 1, slots: 2, slotBytes: 1024, slotsPerHash: 2 });
    try {
      for (let i = 0; i < 20; i++) {
        // Each aborted hash holds both slots when it is aborted: if slots leaked, the next would wait forever.
        const h = pool.hash();
        await h.update(randomBytes(1500));
        const waiting = h.update(randomBytes(4000));
        expect(waiting).toBeInstanceOf(Promise);
        h.abort();
        await expect(waiting).rejects.toThrow(/aborted/);
        h.abort(); // twice is fine
        expect(() => h.update(Buffer.from('x'))).toThrow();
      }
      const h = pool.hash();
      const bytes = randomBytes(50_000);
      await feed(h, bytes, [777]);
      expect(await h.digest()).toBe(sha(bytes));
      // An abort after the digest was asked for rejects it.
      const late = pool.hash();
      await late.update(Buffer.from('abc'));
      const d = late.digest();
      late.abort();
      await expect(d).rejects.toThrow(/aborted/);
      // One worker served all of these.
      expect(pool.workers).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  test('a worker that dies fails the hashes in flight (nothing hangs), and a new worker serves the next ones', async () => {
    const pool = createHashPool({ threads: 1, slots: 4, slotBytes: 1024, slotsPerHash: 2 });
    try {
      for (let round = 0; round < 5; round++) {
        const inFlight = pool.hash();
        void inFlight.update(randomBytes(2048)); // fits in its slots
        const waiting = inFlight.update(randomBytes(8192)); // more than its slots: waits for the worker
        expect(waiting).toBeInstanceOf(Promise);
        const other = pool.hash();
        await other.update(Buffer.from('abc')); // waits if the previous round's slots are not back yet
        // Whatever the worker had answered before it stopped: every promise settles; what was
        // still pending fails with the worker's end.
        const settled = async (p: Promise<unknown>) =>
          p.then(
            (v) => v,
            (e: Error) => e,
          );
        const waited = settled(waiting!);
        const digest = settled(other.digest());
        const [worker] = pool.workers;
        await worker!.terminate();
        const w = await waited;
        if (w instanceof Error) expect(w.message).toMatch(/hashing worker stopped/);
        const d = await digest;
        if (d instanceof Error) expect(d.message).toMatch(/hashing worker stopped/);
        else expect(d).toBe(sha(Buffer.from('abc')));
        // A hash of the dead worker takes nothing more.
        expect(() => inFlight.update(Buffer.from('x'))).toThrow(/hashing worker stopped/);
        await expect(inFlight.digest()).rejects.toThrow(/hashing worker stopped/);
        inFlight.abort(); // harmless after a failure
        // The next hash gets a new worker.
        const next = pool.hash();
        const bytes = randomBytes(100_000);
        await feed(next, bytes, [4096]);
        expect(await next.digest()).toBe(sha(bytes));
        expect(pool.workers).toHaveLength(1);
        expect(pool.workers[0]).not.toBe(worker);
      }
    } finally {
      await pool.close();
    }
  });

  test('close fails what is in flight and refuses new hashes', async () => {
    const pool = createHashPool({ threads: 1 });
    const h = pool.hash();
    void h.update(Buffer.from('abc'));
    const failed = expect(h.digest()).rejects.toThrow(/closed|stopped/);
    await pool.close();
    await failed;
    expect(() => pool.hash()).toThrow(/closed/);
  });

  test('an idle pool does not keep the process alive', async () => {
    // A process that hashes and never closes its pool still exits on its own.
    const kit = path.resolve(__dirname, '..', '..', 'packages', 'kit', 'dist', 'index.js');
    const script = `
      const { createHashPool } = require(${JSON.stringify(kit)});
      const pool = createHashPool();
      const h = pool.hash();
      h.update(Buffer.from('hello'));
      h.digest().then((hex) => console.log(hex));
    `;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', script], { timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    expect(out.trim()).toBe(sha(Buffer.from('hello')));
  });
});
