/**
 * Prepared statements for the embedded database (pglite-worker.ts), as the PostgreSQL client
 * keeps them on a server (sql.ts): a statement's text is parsed, planned and described once,
 * then each run is one Bind, Execute and Sync sent together. PGlite's own `query` parses the
 * text again every time and enters PostgreSQL once per protocol message (Parse, Describe, Bind,
 * Describe, Execute, Sync); a short statement costs a third of that this way.
 *
 * Named and bounded as on a server (statement-names.ts): texts beyond the bound run through
 * `query`. A statement a migration made stale ("cached plan must not change result
 * type", 0A000) runs through `query` from then on, retried at once outside a transaction.
 */
import { parse, type PGlite, protocol } from '@electric-sql/pglite';

import { statementNames } from './statement-names.js';

type Messages = Awaited<ReturnType<PGlite['execProtocolStream']>>;
type Serializer = (value: unknown) => string;

interface Statement {
  /** How each parameter is sent as text, by the type PostgreSQL inferred for it. */
  serializers: Array<Serializer | undefined>;
  /** The rows' description (absent: the statement answers no rows). */
  rows: Messages[number] | undefined;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const { serialize } = protocol;
const SYNC = serialize.sync();
const EXECUTE = serialize.execute({});

export class PreparedStatements {
  private readonly names = statementNames();
  /** By name: what the statement was described as, once prepared. */
  private readonly prepared = new Map<string, Statement>();

  constructor(private readonly db: PGlite) {}

  /** The rows `text` answers with `params` (none for a statement that answers no rows). */
  async query(text: string, params: unknown[] = []): Promise<unknown[]> {
    const name = this.names(text);
    if (!name) return (await this.db.query(text, params)).rows;
    const st = this.prepared.get(name) ?? (await this.prepare(name, text));
    const values = params.map((v, i) => (v === null || v === undefined ? null : (st.serializers[i]?.(v) ?? String(v))));
    let messages: Messages;
    try {
      messages = await this.db.execProtocolStream(concat([serialize.bind({ statement: name, values }), EXECUTE, SYNC]), { syncToFs: false });
    } catch (err) {
      if ((err as { code?: string }).code !== '0A000') throw err;
      this.names.disable(text);
      if (this.db.isInTransaction()) throw err;
      return (await this.db.query(text, params)).rows;
    }
    return parse.parseResults(st.rows ? [st.rows, ...messages] : messages, this.db.parsers)[0]?.rows ?? [];
  }

  /** Parses and describes `text` as `name`; a text that does not parse throws, and is tried again next time. */
  private async prepare(name: string, text: string): Promise<Statement> {
    const described = await this.db.execProtocolStream(concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), SYNC]), {
      syncToFs: false,
    });
    const params = described.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
    const st: Statement = {
      serializers: (params?.dataTypeIDs ?? []).map((t) => this.db.serializers[t] as Serializer | undefined),
      rows: described.find((m) => m.name === 'rowDescription'),
    };
    this.prepared.set(name, st);
    return st;
  }
}
