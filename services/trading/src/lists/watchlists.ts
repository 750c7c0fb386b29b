import { actorOf, DomainError, enqueueEvent, invalid, newId, notFound, type Principal, type Sql } from '@svc/kit';

import { SCHEMA } from '../orders/store.js';
import type { Instruments } from '../orders/symbols.js';
import type { Market, QuoteView } from '../views/market.js';
import type { ListsStore, WatchlistRow } from './store.js';

/**
 * Watchlists (docs/trading.md, "Watchlists"): named lists of paper symbols an account follows, and
 * their quotes at once. Names are unique per account; at most 50 symbols a list.
 */

const MAX_SYMBOLS = 50;

export class Watchlists {
  constructor(readonly deps: { sql: Sql; lists: ListsStore; instruments: Instruments; market: Market; kick(): void }) {}

  private symbols(list: string[]): string[] {
    for (const s of list)
      if (!this.deps.instruments.get(s)) throw new DomainError('invalid_argument', 'unknown_symbol', `symbol: "${s}" is not traded at paper.`);
    const out = [...new Set(list)];
    if (out.length > MAX_SYMBOLS) throw invalid(`symbols: at most ${MAX_SYMBOLS}.`);
    return out;
  }

  private name(n: string): string {
    const name = n.trim();
    if (!name || name.length > 100) throw invalid('name: must be 1 to 100 characters.');
    return name;
  }

  private taken(name: string) {
    return new DomainError('conflict', 'watchlist_name_taken', `A watchlist named "${name}" already exists.`);
  }

  async create(p: Principal, name: string, symbols: string[]): Promise<WatchlistRow> {
    const n = this.name(name);
    const list = this.symbols(symbols);
    const row = await this.deps.sql.tx(async (q) => {
      const r = await this.deps.lists.insertWatchlist(q, { id: newId('wl'), accountId: p.accountId, name: n, symbols: list });
      if (!r) throw this.taken(n);
      await enqueueEvent(q, SCHEMA, {
        subject: 'trading.watchlist.created',
        accountId: p.accountId,
        data: { id: r.id, name: n, symbols: list, actor: actorOf(p) },
      });
      return r;
    });
    this.deps.kick();
    return row;
  }

  list(p: Principal, cursor: string | undefined, limit: number) {
    return this.deps.lists.listWatchlists(this.deps.sql, p.accountId, cursor, limit);
  }

  async get(p: Principal, id: string): Promise<WatchlistRow> {
    const row = await this.deps.lists.watchlist(this.deps.sql, p.accountId, id);
    if (!row) throw notFound('The watchlist');
    return row;
  }

  /** Changes a watchlist under its row lock: a new name, or its symbols. */
  private async change(p: Principal, id: string, how: (w: WatchlistRow) => { name: string; symbols: string[] }): Promise<WatchlistRow> {
    const row = await this.deps.sql.tx(async (q) => {
      const w = await this.deps.lists.watchlist(q, p.accountId, id, true);
      if (!w) throw notFound('The watchlist');
      const next = how(w);
      const r = await this.deps.lists.updateWatchlist(q, p.accountId, id, next.name, next.symbols);
      if (!r) throw this.taken(next.name);
      await enqueueEvent(q, SCHEMA, {
        subject: 'trading.watchlist.updated',
        accountId: p.accountId,
        data: { id, name: r.name, symbols: r.symbols, actor: actorOf(p) },
      });
      return r;
    });
    this.deps.kick();
    return row;
  }

  rename(p: Principal, id: string, name: string) {
    const n = this.name(name);
    return this.change(p, id, (w) => ({ name: n, symbols: w.symbols }));
  }

  addSymbol(p: Principal, id: string, symbol: string) {
    this.symbols([symbol]);
    return this.change(p, id, (w) => ({ name: w.name, symbols: this.symbols([...w.symbols, symbol]) }));
  }

  removeSymbol(p: Principal, id: string, symbol: string) {
    return this.change(p, id, (w) => {
      if (!w.symbols.includes(symbol))
        throw new DomainError('not_found', 'symbol_not_in_watchlist', `${symbol} is not in the watchlist "${w.name}".`);
      return { name: w.name, symbols: w.symbols.filter((s) => s !== symbol) };
    });
  }

  async remove(p: Principal, id: string): Promise<void> {
    await this.deps.sql.tx(async (q) => {
      if (!(await this.deps.lists.deleteWatchlist(q, p.accountId, id))) throw notFound('The watchlist');
      await enqueueEvent(q, SCHEMA, { subject: 'trading.watchlist.deleted', accountId: p.accountId, data: { id, actor: actorOf(p) } });
    });
    this.deps.kick();
  }

  async quotes(p: Principal, id: string): Promise<QuoteView[]> {
    const w = await this.get(p, id);
    const out: QuoteView[] = [];
    for (const s of w.symbols) out.push(await this.deps.market.quote('paper', s));
    return out;
  }
}
