import type { Actor, Queryable } from '@svc/kit';

/** SQL of watchlists, price alerts and the journal (docs/trading.md). Every read is scoped to the account. */

export interface WatchlistRow {
  id: string;
  account_id: string;
  name: string;
  symbols: string[];
  created_at: Date;
  updated_at: Date;
}

export interface AlertRow {
  id: string;
  account_id: string;
  venue: string;
  symbol: string;
  condition: 'above' | 'below';
  price: string;
  note: string | null;
  status: 'active' | 'triggered';
  triggered_at: Date | null;
  triggered_price: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface JournalRow {
  id: string;
  account_id: string;
  title: string;
  body: string;
  symbol: string | null;
  order_id: string | null;
  tags: string[];
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
}

const ALERT = `id, account_id, venue, symbol, condition, price::text, note, status, triggered_at, triggered_price::text, created_at, updated_at`;
const JOURNAL = `id, account_id, title, body, symbol, order_id, tags, created_by, created_at, updated_at`;

function pageQuery(table: string, columns: string, accountId: string, filters: Array<[string, unknown]>, cursor: string | undefined, limit: number) {
  const where = ['account_id = $1'];
  const params: unknown[] = [accountId];
  for (const [sql, v] of filters) {
    if (v === undefined) continue;
    params.push(v);
    where.push(sql.replace('?', `$${params.length}`));
  }
  if (cursor) {
    params.push(cursor);
    where.push(`id < $${params.length}`);
  }
  params.push(limit + 1);
  return { text: `SELECT ${columns} FROM trading.${table} WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`, params };
}

export class ListsStore {
  // Watchlists ---------------------------------------------------------------------------------

  async insertWatchlist(q: Queryable, w: { id: string; accountId: string; name: string; symbols: string[] }): Promise<WatchlistRow | null> {
    const rows = await q.query<WatchlistRow>(
      `INSERT INTO trading.watchlists (id, account_id, name, symbols) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, name) DO NOTHING RETURNING *`,
      [w.id, w.accountId, w.name, w.symbols],
    );
    return rows[0] ?? null;
  }

  async watchlist(q: Queryable, accountId: string, id: string, lock = false): Promise<WatchlistRow | null> {
    const rows = await q.query<WatchlistRow>(`SELECT * FROM trading.watchlists WHERE id = $1 AND account_id = $2${lock ? ' FOR UPDATE' : ''}`, [
      id,
      accountId,
    ]);
    return rows[0] ?? null;
  }

  async listWatchlists(q: Queryable, accountId: string, cursor: string | undefined, limit: number): Promise<WatchlistRow[]> {
    const { text, params } = pageQuery('watchlists', '*', accountId, [], cursor, limit);
    return q.query<WatchlistRow>(text, params);
  }

  /** Sets the name and symbols; null when the name is another watchlist's. */
  async updateWatchlist(q: Queryable, accountId: string, id: string, name: string, symbols: string[]): Promise<WatchlistRow | null> {
    const taken = await q.query(`SELECT 1 FROM trading.watchlists WHERE account_id = $1 AND name = $2 AND id <> $3`, [accountId, name, id]);
    if (taken.length) return null;
    const rows = await q.query<WatchlistRow>(
      `UPDATE trading.watchlists SET name = $3, symbols = $4, updated_at = now() WHERE id = $1 AND account_id = $2 RETURNING *`,
      [id, accountId, name, symbols],
    );
    return rows[0] ?? null;
  }

  async deleteWatchlist(q: Queryable, accountId: string, id: string): Promise<boolean> {
    const rows = await q.query(`DELETE FROM trading.watchlists WHERE id = $1 AND account_id = $2 RETURNING id`, [id, accountId]);
    return rows.length > 0;
  }

  // Alerts -------------------------------------------------------------------------------------

  async insertAlert(
    q: Queryable,
    a: { id: string; accountId: string; venue: string; symbol: string; condition: string; price: string; note: string | null },
  ): Promise<AlertRow> {
    const rows = await q.query<AlertRow>(
      `INSERT INTO trading.alerts (id, account_id, venue, symbol, condition, price, note) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${ALERT}`,
      [a.id, a.accountId, a.venue, a.symbol, a.condition, a.price, a.note],
    );
    return rows[0]!;
  }

  async alert(q: Queryable, accountId: string, id: string, lock = false): Promise<AlertRow | null> {
    const rows = await q.query<AlertRow>(`SELECT ${ALERT} FROM trading.alerts WHERE id = $1 AND account_id = $2${lock ? ' FOR UPDATE' : ''}`, [
      id,
      accountId,
    ]);
    return rows[0] ?? null;
  }

  async listAlerts(q: Queryable, accountId: string, f: { status?: string; symbol?: string; cursor?: string }, limit: number): Promise<AlertRow[]> {
    const { text, params } = pageQuery(
      'alerts',
      ALERT,
      accountId,
      [
        ['status = ?', f.status],
        ['symbol = ?', f.symbol],
      ],
      f.cursor,
      limit,
    );
    return q.query<AlertRow>(text, params);
  }

  async updateAlert(
    q: Queryable,
    accountId: string,
    id: string,
    a: { condition: string; price: string; note: string | null },
  ): Promise<AlertRow | null> {
    // A changed alert is armed again.
    const rows = await q.query<AlertRow>(
      `UPDATE trading.alerts SET condition = $3, price = $4, note = $5, status = 'active', triggered_at = NULL, triggered_price = NULL,
         updated_at = now() WHERE id = $1 AND account_id = $2 RETURNING ${ALERT}`,
      [id, accountId, a.condition, a.price, a.note],
    );
    return rows[0] ?? null;
  }

  async deleteAlert(q: Queryable, accountId: string, id: string): Promise<boolean> {
    const rows = await q.query(`DELETE FROM trading.alerts WHERE id = $1 AND account_id = $2 RETURNING id`, [id, accountId]);
    return rows.length > 0;
  }

  /** The symbols with active alerts at a venue (every account: the checker's work list). */
  async activeAlertSymbols(q: Queryable, venue: string, accountId?: string): Promise<string[]> {
    const rows = await q.query<{ symbol: string }>(
      `SELECT DISTINCT symbol FROM trading.alerts WHERE venue = $1 AND status = 'active' AND ($2::text IS NULL OR account_id = $2)`,
      [venue, accountId ?? null],
    );
    return rows.map((r) => r.symbol);
  }

  /** Marks the active alerts of a symbol that the price satisfies as triggered; answers them. */
  async triggerAlerts(q: Queryable, venue: string, symbol: string, price: string): Promise<AlertRow[]> {
    return q.query<AlertRow>(
      `UPDATE trading.alerts SET status = 'triggered', triggered_at = now(), triggered_price = $3, updated_at = now()
       WHERE venue = $1 AND symbol = $2 AND status = 'active'
         AND ((condition = 'above' AND $3::numeric >= price) OR (condition = 'below' AND $3::numeric <= price))
       RETURNING ${ALERT}`,
      [venue, symbol, price],
    );
  }

  // Journal ------------------------------------------------------------------------------------

  async insertJournal(
    q: Queryable,
    e: { id: string; accountId: string; title: string; body: string; symbol: string | null; orderId: string | null; tags: string[]; actor: Actor },
  ): Promise<JournalRow> {
    const rows = await q.query<JournalRow>(
      `INSERT INTO trading.journal (id, account_id, title, body, symbol, order_id, tags, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
       RETURNING ${JOURNAL}`,
      [e.id, e.accountId, e.title, e.body, e.symbol, e.orderId, e.tags, JSON.stringify(e.actor)],
    );
    return rows[0]!;
  }

  async journalEntry(q: Queryable, accountId: string, id: string): Promise<JournalRow | null> {
    const rows = await q.query<JournalRow>(`SELECT ${JOURNAL} FROM trading.journal WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] ?? null;
  }

  async listJournal(
    q: Queryable,
    accountId: string,
    f: { symbol?: string; tag?: string; orderId?: string; cursor?: string },
    limit: number,
  ): Promise<JournalRow[]> {
    const { text, params } = pageQuery(
      'journal',
      JOURNAL,
      accountId,
      [
        ['symbol = ?', f.symbol],
        ['? = ANY(tags)', f.tag],
        ['order_id = ?', f.orderId],
      ],
      f.cursor,
      limit,
    );
    return q.query<JournalRow>(text, params);
  }

  async updateJournal(q: Queryable, accountId: string, id: string, e: { title: string; body: string; tags: string[] }): Promise<JournalRow | null> {
    const rows = await q.query<JournalRow>(
      `UPDATE trading.journal SET title = $3, body = $4, tags = $5, updated_at = now() WHERE id = $1 AND account_id = $2 RETURNING ${JOURNAL}`,
      [id, accountId, e.title, e.body, e.tags],
    );
    return rows[0] ?? null;
  }

  /** The tags of the account's journal with how many entries carry each, most used first. */
  async journalTags(q: Queryable, accountId: string): Promise<Array<{ tag: string; entries: number; last_used_at: Date }>> {
    return q.query(
      `SELECT tag, count(*)::int AS entries, max(updated_at) AS last_used_at FROM trading.journal, unnest(tags) AS tag
       WHERE account_id = $1 GROUP BY tag ORDER BY count(*) DESC, tag`,
      [accountId],
    );
  }

  async deleteJournal(q: Queryable, accountId: string, id: string): Promise<boolean> {
    const rows = await q.query(`DELETE FROM trading.journal WHERE id = $1 AND account_id = $2 RETURNING id`, [id, accountId]);
    return rows.length > 0;
  }
}
