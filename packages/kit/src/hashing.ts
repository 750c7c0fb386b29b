import { createHash, getHashes } from 'node:crypto';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';

/**
 * A hash computed on a worker thread: `update` copies the bytes into memory shared with the
 * worker and tells it where they are, so the caller's thread (the event loop that reads sockets
 * and writes files) does not spend its time hashing. Bytes are hashed in the order given.
 */
export interface StreamingHash {
  /**
   * Adds bytes. They are copied into shared memory; when that is full (the worker is behind),
   * the rest of `chunk` is copied as the worker frees room, and the returned promise resolves
   * once all of `chunk` is taken (do not change `chunk` or call `update` again before). Returns
   * undefined when everything was taken at once. Throws once the hash failed or ended.
   */
  update(chunk: Uint8Array): Promise<void> | undefined;
  /** The hex digest of every byte added (the first algorithm's); ends the hash. Rejects if the worker failed. */
  digest(): Promise<string>;
  /** The hex digests of every byte added, one per algorithm in the order given; ends the hash. */
  digests(): Promise<string[]>;
  /** Drops the hash's state (a failed upload). Safe to call at any time, more than once. */
  abort(): void;
}

export interface HashPool {
  /**
   * A new hash (`sha256` unless told) on one of the pool's workers; the worker starts on first
   * use. When the caller knows the content is small (`expectedBytes` up to the pool's
   * `inlineBytes`), the hash runs on the calling thread instead: a trip to the worker and back
   * costs more time than hashing a few hundred KiB. Several algorithms (e.g. `['sha256',
   * 'crc32']`) hash the same bytes, copied once; `crc32` is zlib's CRC-32 (8 hex digits).
   */
  hash(algorithm?: string | readonly string[], expectedBytes?: number): StreamingHash;
  /** Stops the workers; hashes in flight fail. */
  close(): Promise<void>;
  /** The running workers (for diagnostics and tests). */
  readonly workers: readonly Worker[];
}

export interface HashPoolOptions {
  /** Worker threads; default: one per spare CPU core (cores − 1), 1 to 4. */
  threads?: number;
  /** Bytes per slot of shared memory (one message to the worker); default 256 KiB. */
  slotBytes?: number;
  /** Slots of shared memory per worker (memory: slots × slotBytes, kept while the worker runs); default 16. */
  slots?: number;
  /** Slots one hash may fill before it waits for the worker; default half of `slots`. */
  slotsPerHash?: number;
  /** Contents of at most this many bytes (when the caller says so) are hashed on the calling thread; default 1 MiB. */
  inlineBytes?: number;
  /** The threads' name (seen in profiles). */
  name?: string;
}

// The worker: one hash per id; hashes the bytes of the slots it is told about (a batch per
// message) in place and gives the slots back (after a few, or when the messages that arrived
// together are done). A port's messages arrive in order, so an abort or a digest comes after the
// updates before it.
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const zlib = require('node:zlib');
const { arena, slotBytes } = workerData;
const crc32 = () => {
  let value = 0;
  return { update: (b) => void (value = zlib.crc32(b, value)), digest: () => value.toString(16).padStart(8, '0') };
};
const make = (algorithms) => algorithms.map((a) => (a === 'crc32' ? crc32() : createHash(a)));
const hashes = new Map();
let freed = [];
let scheduled = false;
const giveBack = () => {
  scheduled = false;
  if (freed.length) parentPort.postMessage({ op: 'free', slots: freed });
  freed = [];
};
parentPort.on('message', (m) => {
  if (m.op === 'update') {
    for (const u of m.items) {
      let h = hashes.get(u.id);
      if (!h) hashes.set(u.id, (h = make(u.algorithms)));
      const bytes = new Uint8Array(arena, u.slot * slotBytes, u.length);
      for (const one of h) one.update(bytes);
      freed.push(u.slot);
      if (freed.length >= 4) giveBack();
    }
    if (freed.length && !scheduled) {
      scheduled = true;
      setImmediate(giveBack);
    }
  } else if (m.op === 'digest') {
    const h = hashes.get(m.id) || make(m.algorithms);
    hashes.delete(m.id);
    parentPort.postMessage({ op: 'digest', id: m.id, hex: h.map((one) => one.digest('hex')) });
  } else if (m.op === 'abort') {
    hashes.delete(m.id);
  }
});
`;

type WorkerMessage = { op: 'free'; slots: number[] } | { op: 'digest'; id: number; hex: string[] };

/** One worker thread, its shared memory (cut in slots) and the hashes it serves. */
class Thread {
  readonly worker: Worker;
  readonly hashes = new Map<number, PooledHash>();
  readonly views: Buffer[] = [];
  dead = false;
  private readonly free: number[] = [];
  /** Which hash a slot handed to the worker belongs to. */
  private readonly owners: (PooledHash | null)[] = [];
  /** Hashes waiting for a free slot, first come first served. */
  private readonly waiting: PooledHash[] = [];
  /** Filled slots not told to the worker yet. */
  private outbox: Array<{ id: number; algorithms: readonly string[]; slot: number; length: number }> = [];

  constructor(
    name: string,
    readonly slotBytes: number,
    slots: number,
    private readonly onDeath: (t: Thread) => void,
  ) {
    const arena = new SharedArrayBuffer(slotBytes * slots);
    for (let i = 0; i < slots; i++) {
      this.views.push(Buffer.from(arena, i * slotBytes, slotBytes));
      this.free.push(i);
      this.owners.push(null);
    }
    // No inherited execArgv: the parent's --require/--import hooks (tracing) have no business here.
    this.worker = new Worker(WORKER_SOURCE, { eval: true, name, execArgv: [], workerData: { arena, slotBytes } });
    this.worker.unref();
    this.worker.on('message', (m: WorkerMessage) => this.receive(m));
    this.worker.on('error', (err) => this.die(err));
    this.worker.on('messageerror', (err) => this.die(err));
    this.worker.on('exit', (code) => this.die(new Error(`the hashing worker stopped (exit code ${code})`)));
  }

  /** The worker keeps the process alive only while it has work. */
  track(h: PooledHash): void {
    if (!this.hashes.size) this.worker.ref();
    this.hashes.set(h.id, h);
  }

  untrack(h: PooledHash): void {
    const i = this.waiting.indexOf(h);
    if (i >= 0) this.waiting.splice(i, 1);
    if (this.hashes.delete(h.id) && !this.hashes.size) this.worker.unref();
  }

  take(): number | undefined {
    return this.free.pop();
  }

  /** A slot taken and not used (a hash that ended or was aborted before filling it). */
  giveBack(slot: number): void {
    this.free.push(slot);
    this.wake();
  }

  /**
   * Hands a filled slot to the worker. Slots are told in batches (each message, and each wake-up
   * of the worker, has a cost): when a few are ready, when a hash is about to wait, before any
   * other message, and at the latest once this turn of the event loop is over.
   */
  send(h: PooledHash, slot: number, length: number): void {
    this.owners[slot] = h;
    this.outbox.push({ id: h.id, algorithms: h.algorithms, slot, length });
    if (this.outbox.length >= SEND_BATCH) this.flush();
    else if (this.outbox.length === 1) setImmediate(this.flushSoon);
  }

  flush(): void {
    if (!this.outbox.length || this.dead) return;
    const items = this.outbox;
    this.outbox = [];
    this.worker.postMessage({ op: 'update', items });
  }

  private readonly flushSoon = () => this.flush();

  post(message: object): void {
    this.flush();
    this.worker.postMessage(message);
  }

  wait(h: PooledHash): void {
    // The worker gives slots back only for slots it was told about.
    this.flush();
    if (!this.waiting.includes(h)) this.waiting.push(h);
  }

  private receive(m: WorkerMessage): void {
    if (m.op === 'digest') {
      this.hashes.get(m.id)?.resolve(m.hex);
      return;
    }
    for (const slot of m.slots) {
      const owner = this.owners[slot];
      this.owners[slot] = null;
      owner?.released();
      this.free.push(slot);
    }
    this.wake();
  }

  /** Lets waiting hashes copy into the free slots, in the order they started waiting. */
  private wake(): void {
    for (let i = 0; i < this.waiting.length && this.free.length;) {
      if (this.waiting[i]!.resume()) this.waiting.splice(i, 1);
      else i++;
    }
  }

  /** A crashed (or stopped) worker fails every hash it had; the pool starts a new one when needed. */
  die(err: unknown): void {
    if (this.dead) return;
    this.dead = true;
    this.outbox = [];
    this.onDeath(this);
    const error = err instanceof Error ? err : new Error(String(err));
    for (const h of [...this.hashes.values()]) h.fail(error);
    this.hashes.clear();
    this.waiting.length = 0;
    this.worker.unref();
  }
}

let nextId = 1;
/** Filled slots told to the worker in one message. */
const SEND_BATCH = 4;

class PooledHash implements StreamingHash {
  readonly id = nextId++;
  /** The slot being filled, and how much of it is. */
  private slot = -1;
  private staged = 0;
  /** Slots handed to the worker and not given back yet. */
  private inFlight = 0;
  /** What is left of the chunk `update` could not take at once. */
  private rest: Uint8Array | null = null;
  private blocked: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private result: { resolve: (hex: string[]) => void; reject: (e: Error) => void } | null = null;
  private error: Error | null = null;
  private ended = false;

  constructor(
    private readonly thread: Thread,
    readonly algorithms: readonly string[],
    private readonly maxInFlight: number,
  ) {
    thread.track(this);
  }

  update(chunk: Uint8Array): Promise<void> | undefined {
    if (this.error) throw this.error;
    if (this.ended) throw new Error('this hash has ended');
    if (this.blocked) throw new Error('update called before the previous chunk was taken');
    this.rest = chunk;
    if (this.fill()) return undefined;
    this.thread.wait(this);
    return new Promise<void>((resolve, reject) => (this.blocked = { resolve, reject }));
  }

  async digest(): Promise<string> {
    return (await this.digests())[0]!;
  }

  digests(): Promise<string[]> {
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.reject(new Error('this hash has ended'));
    if (this.blocked) return Promise.reject(new Error('digest called before the last chunk was taken'));
    this.ended = true;
    if (this.slot >= 0) {
      if (this.staged) this.send();
      else this.thread.giveBack(this.slot);
      this.slot = -1;
    }
    return new Promise<string[]>((resolve, reject) => {
      this.result = { resolve, reject };
      this.thread.post({ op: 'digest', id: this.id, algorithms: this.algorithms });
    });
  }

  abort(): void {
    this.ended = true;
    this.rest = null;
    if (this.slot >= 0 && !this.thread.dead) this.thread.giveBack(this.slot);
    this.slot = -1;
    const aborted = new Error('the hash was aborted');
    this.blocked?.reject(aborted);
    this.blocked = null;
    this.result?.reject(aborted);
    this.result = null;
    if (this.thread.hashes.has(this.id)) {
      // Slots already handed over come back when the worker is done with them.
      if (!this.thread.dead) this.thread.post({ op: 'abort', id: this.id });
      this.thread.untrack(this);
    }
  }

  /** Copies what it can of `rest` into slots; true when all of it is taken. */
  private fill(): boolean {
    let rest = this.rest!;
    const size = this.thread.slotBytes;
    while (rest.length) {
      if (this.slot < 0) {
        if (this.inFlight >= this.maxInFlight) break;
        const slot = this.thread.take();
        if (slot === undefined) break;
        this.slot = slot;
        this.staged = 0;
      }
      const n = Math.min(size - this.staged, rest.length);
      this.thread.views[this.slot]!.set(n === rest.length ? rest : rest.subarray(0, n), this.staged);
      this.staged += n;
      rest = rest.subarray(n);
      if (this.staged === size) this.send();
    }
    this.rest = rest.length ? rest : null;
    return !this.rest;
  }

  private send(): void {
    this.thread.send(this, this.slot, this.staged);
    this.inFlight++;
    this.slot = -1;
    this.staged = 0;
  }

  /** The worker gave back one of this hash's slots. */
  released(): void {
    this.inFlight--;
    if (this.blocked && this.inFlight < this.maxInFlight) this.thread.wait(this);
  }

  /** Room again (called by the thread, in turn): true when the waiting chunk is all taken. */
  resume(): boolean {
    if (!this.blocked || !this.rest) return true;
    if (!this.fill()) return false;
    const b = this.blocked;
    this.blocked = null;
    b.resolve();
    return true;
  }

  resolve(hex: string[]): void {
    this.thread.untrack(this);
    this.result?.resolve(hex);
    this.result = null;
  }

  fail(err: Error): void {
    if (this.error) return;
    this.error = err;
    this.rest = null;
    this.slot = -1;
    this.blocked?.reject(err);
    this.blocked = null;
    this.result?.reject(err);
    this.result = null;
  }
}

/** One algorithm's running state on the calling thread. */
interface Digester {
  update(chunk: Uint8Array): void;
  hex(): string;
}

/** `algorithm` on the calling thread; `crc32` is zlib's running CRC-32 (as in the worker). */
function digester(algorithm: string): Digester {
  if (algorithm === 'crc32') {
    let value = 0;
    return { update: (chunk) => void (value = zlib.crc32(chunk, value)), hex: () => crc32Hex(value) };
  }
  const h = createHash(algorithm);
  return { update: (chunk) => void h.update(chunk), hex: () => h.digest('hex') };
}

/** A CRC-32 value as its 8 hex digits (the digest `crc32` gives). */
export const crc32Hex = (value: number): string => value.toString(16).padStart(8, '0');

/** Whether this process can compute `algorithm` (`crc32` needs Node 20.15 or 22.2). */
function known(algorithm: string): boolean {
  return algorithm === 'crc32' ? typeof zlib.crc32 === 'function' : getHashes().includes(algorithm);
}

/** The same interface on the calling thread (small contents). */
class InlineHash implements StreamingHash {
  private readonly hashes: Digester[];
  private ended = false;

  constructor(algorithms: readonly string[]) {
    this.hashes = algorithms.map(digester);
  }

  update(chunk: Uint8Array): undefined {
    if (this.ended) throw new Error('this hash has ended');
    for (const h of this.hashes) h.update(chunk);
    return undefined;
  }

  async digest(): Promise<string> {
    return (await this.digests())[0]!;
  }

  digests(): Promise<string[]> {
    if (this.ended) return Promise.reject(new Error('this hash has ended'));
    this.ended = true;
    return Promise.resolve(this.hashes.map((h) => h.hex()));
  }

  abort(): void {
    this.ended = true;
  }
}

/**
 * Hashing off the event loop: a small pool of worker threads shared by all the hashes of a
 * process (or a service). Each worker has a fixed block of shared memory (16 × 256 KiB by
 * default) that the hashes copy their bytes into; nothing is allocated per chunk. A worker that
 * crashes fails the hashes it had (their `update` throws, their `digest` rejects, a waiting
 * `update` rejects) and a new one serves the next hashes. Idle workers do not keep the process
 * alive; `close` stops them.
 */
export function createHashPool(options: HashPoolOptions = {}): HashPool {
  const size = Math.max(1, options.threads ?? Math.min(4, Math.max(1, os.availableParallelism() - 1)));
  const slotBytes = options.slotBytes ?? 256 * 1024;
  const slots = Math.max(1, options.slots ?? 16);
  const perHash = Math.max(1, Math.min(slots, options.slotsPerHash ?? Math.ceil(slots / 2)));
  const inlineBytes = options.inlineBytes ?? 1024 * 1024;
  const name = options.name ?? 'hash';
  const threads: Thread[] = [];
  let closed = false;
  const forget = (t: Thread) => {
    const i = threads.indexOf(t);
    if (i >= 0) threads.splice(i, 1);
  };
  return {
    hash(algorithm = 'sha256', expectedBytes) {
      if (closed) throw new Error('the hash pool is closed');
      const algorithms = typeof algorithm === 'string' ? [algorithm] : [...algorithm];
      if (!algorithms.length) throw new Error('no hash algorithm given');
      for (const a of algorithms) if (!known(a)) throw new Error(`unknown hash algorithm ${a}`);
      if (expectedBytes !== undefined && expectedBytes <= inlineBytes) return new InlineHash(algorithms);
      // The least busy worker, or a new one while the pool is not full.
      let thread = threads.reduce<Thread | undefined>((best, t) => (!best || t.hashes.size < best.hashes.size ? t : best), undefined);
      if (!thread || (thread.hashes.size > 0 && threads.length < size)) {
        thread = new Thread(name, slotBytes, slots, forget);
        threads.push(thread);
      }
      return new PooledHash(thread, algorithms, perHash);
    },
    async close() {
      closed = true;
      const all = threads.splice(0);
      await Promise.all(
        all.map(async (t) => {
          t.die(new Error('the hash pool was closed'));
          await t.worker.terminate();
        }),
      );
    },
    get workers() {
      return threads.map((t) => t.worker);
    },
  };
}
