/**
 * The embedded database on a thread of its own (pglite-worker.ts): query, exec and close as
 * messages. Statements run there, so the service's event loop only sends them and reads the rows;
 * a long statement of one tenant no longer stops every other tenant's requests. The thread keeps
 * the process alive only while a request is in flight.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import type { PgliteErrorData, PgliteReply, PgliteRequest, PgliteWorkerData } from './pglite-worker.js';

const WORKER = path.join(__dirname, 'pglite-worker.js');

type Pending = { resolve(rows: unknown[] | undefined): void; reject(err: Error): void };

/** An error of the thread's, rebuilt here with PostgreSQL's fields (code, constraint, detail…). */
const rebuilt = (e: PgliteErrorData) => Object.assign(new Error(e.message), e.fields, { name: e.name });

/** A request before its id is given: `Omit` on each member of the union (a plain `Omit` would merge them). */
type Unnumbered<T> = T extends unknown ? Omit<T, 'id'> : never;

export class PgliteThread {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.unref();
    worker.on('message', (m: PgliteReply) => {
      if (m.op !== 'done') return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.settled(m.id);
      if (m.error) p.reject(rebuilt(m.error));
      else p.resolve(m.rows);
    });
    const die = (err: Error) => {
      this.dead ??= err;
      for (const [id, p] of [...this.pending]) {
        this.settled(id);
        p.reject(this.dead);
      }
    };
    worker.on('error', die);
    worker.on('exit', (code) => die(new Error(`the embedded database's thread stopped (exit code ${code})`)));
  }

  /** Starts the thread and PGlite in it; rejects with PGlite's own error when it cannot start. */
  static start(data: PgliteWorkerData): Promise<PgliteThread> {
    // No inherited execArgv: the parent's --require/--import hooks (tracing) have no business here.
    const worker = new Worker(WORKER, { name: 'pglite', execArgv: [], workerData: data });
    return new Promise((resolve, reject) => {
      const onMessage = (m: PgliteReply) => {
        worker.off('error', onError);
        worker.off('message', onMessage);
        if (m.op === 'ready') return resolve(new PgliteThread(worker));
        void worker.terminate();
        reject(m.op === 'failed' ? rebuilt(m.error) : new Error('the embedded database did not start'));
      };
      const onError = (err: Error) => {
        worker.off('message', onMessage);
        reject(err);
      };
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
  }

  private send(m: Unnumbered<PgliteRequest>): Promise<unknown[] | undefined> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.pending.size) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...m, id } as PgliteRequest);
    });
  }

  private settled(id: number): void {
    if (this.pending.delete(id) && !this.pending.size) this.worker.unref();
  }

  /** `begin`: BEGIN first, in the same round trip (see PgliteRequest). */
  async query<R>(text: string, params?: unknown[], begin = false): Promise<R[]> {
    return (await this.send({ op: 'query', text, params, begin })) as R[];
  }

  async exec(text: string, begin = false): Promise<void> {
    await this.send({ op: 'exec', text, begin });
  }

  /** PGlite closes its files; the thread then ends. */
  async close(): Promise<void> {
    try {
      await this.send({ op: 'close' });
    } finally {
      await this.terminate();
    }
  }

  /** Ends the thread now, whatever it is running (a statement that would not end). */
  async terminate(): Promise<void> {
    this.dead ??= new Error('the embedded database is closed');
    await this.worker.terminate();
  }
}
