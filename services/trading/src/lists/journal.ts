import { actorOf, enqueueEvent, invalid, newId, notFound, type Principal, type Sql } from '@svc/kit';

import { SCHEMA, type TradingStore } from '../orders/store.js';
import type { JournalRow, ListsStore } from './store.js';

/**
 * The trading journal (docs/trading.md, "Journal"): notes a person or agent keeps on its trading —
 * why an order was placed, a plan for a symbol, a review — optionally tied to a symbol and to one of
 * the account's orders, with tags to find them again.
 */

const TAG = /^[a-z0-9][a-z0-9_-]{0,39}$/;

function checkText(title: string | undefined, body: string | undefined) {
  if (title !== undefined && (!title.trim() || title.length > 200)) throw invalid('title: must be 1 to 200 characters.');
  if (body !== undefined && body.length > 20_000) throw invalid('body: at most 20000 characters.');
}

function checkTags(tags: string[]): string[] {
  if (tags.length > 20) throw invalid('tags: at most 20.');
  for (const t of tags) if (!TAG.test(t)) throw invalid(`tags: "${t}" must be 1 to 40 of a-z, 0-9, _ and -, starting with a letter or digit.`);
  return [...new Set(tags)];
}

export class Journal {
  constructor(readonly deps: { sql: Sql; lists: ListsStore; store: TradingStore; kick(): void }) {}

  async create(p: Principal, e: { title: string; body: string; symbol?: string; orderId?: string; tags: string[] }): Promise<JournalRow> {
    checkText(e.title, e.body);
    const tags = checkTags(e.tags);
    if (e.symbol !== undefined && !/^[A-Z0-9./-]{1,32}$/.test(e.symbol)) throw invalid('symbol: must be 1 to 32 of A-Z, 0-9, . / -');
    const row = await this.deps.sql.tx(async (q) => {
      let symbol = e.symbol ?? null;
      if (e.orderId) {
        const order = await this.deps.store.order(q, p.accountId, e.orderId);
        if (!order) throw notFound('The order');
        symbol ??= order.symbol;
      }
      const r = await this.deps.lists.insertJournal(q, {
        id: newId('jrn'),
        accountId: p.accountId,
        title: e.title.trim(),
        body: e.body,
        symbol,
        orderId: e.orderId ?? null,
        tags,
        actor: actorOf(p),
      });
      await enqueueEvent(q, SCHEMA, {
        subject: 'trading.journal.created',
        accountId: p.accountId,
        data: { id: r.id, symbol, orderId: r.order_id, tags },
      });
      return r;
    });
    this.deps.kick();
    return row;
  }

  list(p: Principal, f: { symbol?: string; tag?: string; orderId?: string; cursor?: string }, limit: number) {
    return this.deps.lists.listJournal(this.deps.sql, p.accountId, f, limit);
  }

  tags(p: Principal) {
    return this.deps.lists.journalTags(this.deps.sql, p.accountId);
  }

  async get(p: Principal, id: string): Promise<JournalRow> {
    const row = await this.deps.lists.journalEntry(this.deps.sql, p.accountId, id);
    if (!row) throw notFound('The journal entry');
    return row;
  }

  async update(p: Principal, id: string, u: { title?: string; body?: string; tags?: string[] }): Promise<JournalRow> {
    if (u.title === undefined && u.body === undefined && u.tags === undefined) throw invalid('Name at least one of title, body, tags to change.');
    checkText(u.title, u.body);
    const tags = u.tags === undefined ? undefined : checkTags(u.tags);
    const row = await this.deps.sql.tx(async (q) => {
      const e = await this.deps.lists.journalEntry(q, p.accountId, id);
      if (!e) throw notFound('The journal entry');
      const r = await this.deps.lists.updateJournal(q, p.accountId, id, {
        title: u.title?.trim() ?? e.title,
        body: u.body ?? e.body,
        tags: tags ?? e.tags,
      });
      await enqueueEvent(q, SCHEMA, { subject: 'trading.journal.updated', accountId: p.accountId, data: { id, tags: r!.tags } });
      return r!;
    });
    this.deps.kick();
    return row;
  }

  async remove(p: Principal, id: string): Promise<void> {
    await this.deps.sql.tx(async (q) => {
      if (!(await this.deps.lists.deleteJournal(q, p.accountId, id))) throw notFound('The journal entry');
      await enqueueEvent(q, SCHEMA, { subject: 'trading.journal.deleted', accountId: p.accountId, data: { id } });
    });
    this.deps.kick();
  }
}
