import { actorOf, enqueueEvent, invalid, newId, notFound, type Principal, type Sql } from '@svc/kit';

import { SCHEMA } from '../orders/store.js';
import { decimalInput, toTicks } from '../orders/symbols.js';
import type { Market } from '../views/market.js';
import type { AlertRow, ListsStore } from './store.js';

/**
 * Price alerts (docs/trading.md, "Price alerts"): an alert watches a paper symbol's reference price
 * (the price the market maker quotes around, which moves every step) and triggers once when it is
 * at or above (`above`) or at or below (`below`) the alert's price. Alerts are checked every few
 * seconds by the service and before each read; a triggered alert publishes
 * `svc.trading.alert.triggered` and stays until changed (which arms it again) or deleted.
 */

const CONDITIONS = ['above', 'below'];

export class PriceAlerts {
  constructor(readonly deps: { sql: Sql; lists: ListsStore; market: Market; kick(): void }) {}

  private check(venue: string, symbol: string, condition: string, price: string | number) {
    const spec = this.deps.market.spec(venue, symbol);
    if (!CONDITIONS.includes(condition)) throw invalid('condition: must be "above" or "below".');
    const p = decimalInput('price', price)!;
    const t = toTicks(spec, p);
    if (typeof t === 'string') throw invalid(`price: ${t}.`);
    return p;
  }

  async create(p: Principal, a: { venue: string; symbol: string; condition: string; price: string; note?: string }): Promise<AlertRow> {
    const price = this.check(a.venue, a.symbol, a.condition, a.price);
    if (a.note !== undefined && a.note.length > 500) throw invalid('note: at most 500 characters.');
    const row = await this.deps.sql.tx(async (q) => {
      const r = await this.deps.lists.insertAlert(q, {
        id: newId('alrt'),
        accountId: p.accountId,
        venue: 'paper',
        symbol: a.symbol,
        condition: a.condition,
        price,
        note: a.note ?? null,
      });
      await enqueueEvent(q, SCHEMA, { subject: 'trading.alert.created', accountId: p.accountId, data: { ...view(r), actor: actorOf(p) } });
      return r;
    });
    this.deps.kick();
    await this.sweep(p.accountId);
    return (await this.deps.lists.alert(this.deps.sql, p.accountId, row.id))!;
  }

  async list(p: Principal, f: { status?: string; symbol?: string; cursor?: string }, limit: number) {
    if (f.status && f.status !== 'active' && f.status !== 'triggered') throw invalid('status: must be "active" or "triggered".');
    await this.sweep(p.accountId);
    return this.deps.lists.listAlerts(this.deps.sql, p.accountId, f, limit);
  }

  async get(p: Principal, id: string): Promise<AlertRow> {
    await this.sweep(p.accountId);
    const row = await this.deps.lists.alert(this.deps.sql, p.accountId, id);
    if (!row) throw notFound('The alert');
    return row;
  }

  async update(p: Principal, id: string, u: { condition?: string; price?: string; note?: string; clearNote: boolean }): Promise<AlertRow> {
    if (u.condition === undefined && u.price === undefined && u.note === undefined && !u.clearNote)
      throw invalid('Name at least one of condition, price, note to change.');
    if (u.note !== undefined && u.note.length > 500) throw invalid('note: at most 500 characters.');
    await this.deps.sql.tx(async (q) => {
      const a = await this.deps.lists.alert(q, p.accountId, id, true);
      if (!a) throw notFound('The alert');
      const condition = u.condition ?? a.condition;
      const price = this.check(a.venue, a.symbol, condition, u.price ?? a.price);
      const r = await this.deps.lists.updateAlert(q, p.accountId, id, { condition, price, note: u.clearNote ? null : (u.note ?? a.note) });
      await enqueueEvent(q, SCHEMA, { subject: 'trading.alert.updated', accountId: p.accountId, data: { ...view(r!), actor: actorOf(p) } });
    });
    this.deps.kick();
    return this.get(p, id);
  }

  async remove(p: Principal, id: string): Promise<void> {
    await this.deps.sql.tx(async (q) => {
      if (!(await this.deps.lists.deleteAlert(q, p.accountId, id))) throw notFound('The alert');
      await enqueueEvent(q, SCHEMA, { subject: 'trading.alert.deleted', accountId: p.accountId, data: { id, actor: actorOf(p) } });
    });
    this.deps.kick();
  }

  /** Triggers the active alerts (of one account, or all) that the symbols' reference prices now satisfy. */
  async sweep(accountId?: string): Promise<number> {
    let n = 0;
    for (const symbol of await this.deps.lists.activeAlertSymbols(this.deps.sql, 'paper', accountId)) {
      const reference = await this.deps.market.referenceNow(symbol);
      n += await this.deps.sql.tx(async (q) => {
        const hit = await this.deps.lists.triggerAlerts(q, 'paper', symbol, reference);
        for (const r of hit) await enqueueEvent(q, SCHEMA, { subject: 'trading.alert.triggered', accountId: r.account_id, data: view(r) });
        return hit.length;
      });
    }
    if (n) this.deps.kick();
    return n;
  }
}

const view = (r: AlertRow) => ({
  id: r.id,
  venue: r.venue,
  symbol: r.symbol,
  condition: r.condition,
  price: r.price,
  status: r.status,
  triggeredPrice: r.triggered_price,
});
