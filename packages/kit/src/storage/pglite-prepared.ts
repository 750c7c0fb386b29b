/**
 * Prepared statements for the embedded database (pglite-worker.ts), as the PostgreSQL client
 * keeps them on a server (sql.ts): a statement's text is parsed, planned and described once,
 * then each run is one Bind, Execute and Sync sent together. PGlite's own `query` parses the
 * text again every time and enters PostgreSQL once per protocol message (Parse, Describe, Bind,
 * Describe, Execute, Sync); a short statement costs a third of that this way.
 *
 * Bounded as on a server: the first MAX_PREPARED distinct texts are prepared, later ones run
 * through `query`. A statement a migration made stale ("cached plan must not change result
 * type", 0A000) runs through `query` from then on, retried at once outside a transaction.
 */
import { parse, type PGlite, protocol } from '@electric-sql/pglite';

const MAX_PREPARED = 500;

type Messages = Awaited<ReturnType<PGlite['execProtocolStream']>>;
type Serializer = (value: unknown) => string;

interface Statement {
  name: string;
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
  /** By text: the statement, or null when the text runs unprepared. */
  private readonly statements = new Map<string, Statement | null>();
  private named = 0;

  constructor(private readonly db: PGlite) {}

  /** The rows `text` answers with `params` (none for a statement that answers no rows). */
  async query(text: string, params: unknown[] = []): Promise<unknown[]> {
    let st = this.statements.get(text);
    if (st === undefined) st = await this.prepare(text);
    if (!st) return (await this.db.query(text, params)).rows;
    const values = params.map((v, i) => (v === null || v === undefined ? null : (st.serializers[i]?.(v) ?? String(v))));
    let messages: Messages;
    try {
      messages = await this.db.execProtocolStream(concat([serialize.bind({ statement: st.name, values }), EXECUTE, SYNC]), { syncToFs: false });
    } catch (err) {
      if ((err as { code?: string }).code !== '0A000') throw err;
      this.statements.set(text, null);
      if (this.db.isInTransaction()) throw err;
      return (await this.db.query(text, params)).rows;
    }
    return parse.parseResults(st.rows ? [st.rows, ...messages] : messages, this.db.parsers)[0]?.rows ?? [];
  }

  private async prepare(text: string): Promise<Statement | null> {
    if (this.named >= MAX_PREPARED) {
      this.statements.set(text, null);
      return null;
    }
    const name = `svc_${this.named}`;
    // A text that does not parse throws here and is tried again next time (it is not remembered).
    const described = await this.db.execProtocolStream(concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), SYNC]), {
      syncToFs: false,
    });
    this.named++;
    const params = described.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
    const st: Statement = {
      name,
      serializers: (params?.dataTypeIDs ?? []).map((t) => this.db.serializers[t] as Serializer | undefined),
      rows: described.find((m) => m.name === 'rowDescription'),
    };
    this.statements.set(text, st);
    return st;
  }
}
