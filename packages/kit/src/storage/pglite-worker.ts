/**
 * The embedded database's thread (pglite-thread.ts starts it): PGlite, which runs PostgreSQL as
 * WebAssembly synchronously, lives here, so that a statement's time is spent on this thread and
 * never on the service's event loop, which serves every tenant's requests. Requests are run one at
 * a time, in the order they came; the parent takes the one connection in turn (pglite.ts).
 */
import v8 from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';

import { PGlite } from '@electric-sql/pglite';

import { PreparedStatements } from './pglite-prepared.js';

/**
 * `begin`: BEGIN runs first, in the same message (a transaction's first statement carries it: one
 * round trip between the threads fewer per transaction).
 */
export type PgliteRequest =
  | { id: number; op: 'query'; text: string; params?: unknown[]; begin: boolean }
  | { id: number; op: 'exec'; text: string; begin: boolean }
  | { id: number; op: 'close' };

/** An error as plain data: a message and the fields PostgreSQL names (code, constraint, detail…). */
export interface PgliteErrorData {
  name: string;
  message: string;
  fields: Record<string, string | number | boolean>;
}

export type PgliteReply =
  { op: 'ready' } | { op: 'failed'; error: PgliteErrorData } | { op: 'done'; id: number; rows?: unknown[]; error?: PgliteErrorData };

export interface PgliteWorkerData {
  dataDir: string;
  /** PostgreSQL settings (`name=value`) beyond PGlite's defaults. */
  settings: string[];
  tieringBudget: number;
}

const port = parentPort!;
const data = workerData as PgliteWorkerData;

function errorData(err: unknown): PgliteErrorData {
  const e = err instanceof Error ? err : new Error(String(err));
  const fields: PgliteErrorData['fields'] = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') fields[k] = v;
  }
  return { name: e.name, message: e.message, fields };
}

async function main(): Promise<void> {
  // Read when the module is instantiated: set before PGlite compiles it (see pglite.ts).
  v8.setFlagsFromString(`--wasm-tiering-budget=${data.tieringBudget}`);
  let db: PGlite;
  try {
    db = await PGlite.create(data.dataDir, { startParams: [...PGlite.defaultStartParams, ...data.settings.flatMap((s) => ['-c', s])] });
  } catch (err) {
    port.postMessage({ op: 'failed', error: errorData(err) } satisfies PgliteReply);
    return;
  }
  const prepared = new PreparedStatements(db);
  let chain = Promise.resolve();
  port.on('message', (m: PgliteRequest) => {
    chain = chain.then(async () => {
      let reply: PgliteReply;
      try {
        // Through a prepared statement: about half of what PGlite's exec costs for BEGIN.
        if (m.op !== 'close' && m.begin) await prepared.query('BEGIN');
        if (m.op === 'query') reply = { op: 'done', id: m.id, rows: await prepared.query(m.text, m.params) };
        else if (m.op === 'exec') {
          await db.exec(m.text);
          reply = { op: 'done', id: m.id };
        } else {
          await db.close();
          reply = { op: 'done', id: m.id };
        }
      } catch (err) {
        reply = { op: 'done', id: m.id, error: errorData(err) };
      }
      port.postMessage(reply);
    });
  });
  port.postMessage({ op: 'ready' } satisfies PgliteReply);
}

void main();
