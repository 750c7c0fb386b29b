import { notFound, type Principal, type Sql } from '@svc/kit';

import type { FillRow } from '../orders/store.js';
import { dec, money, mul, ratio } from './decimal.js';
import type { Market } from './market.js';
import { applyFill, type Portfolio } from './portfolio.js';
import type { ViewsStore } from './store.js';

/**
 * How the paper account has done since its last reset (docs/trading.md, "Portfolio"): return,
 * maximum drawdown of equity, closing trades won and lost, fees and turnover; where its equity is
 * (cash and each position, by weight); and one fill.
 */

const pct = (a: bigint, b: bigint) => Math.round(ratio(a, b) * 100 * 10_000) / 10_000;

export class Performance {
  constructor(readonly deps: { sql: Sql; views: ViewsStore; market: Market; portfolio: Portfolio }) {}

  async performance(p: Principal, venue: string) {
    this.deps.market.venue(venue);
    const { fills, since, startingCash, marks } = await this.deps.portfolio.state(p.accountId);
    const start = startingCash * 10n ** 9n;
    const books = new Map<string, ReturnType<typeof this.deps.portfolio.empty>>();
    let cash = start;
    let peak = start;
    let drawdown = 0n;
    let drawdownPct = 0;
    let wins = 0;
    let losses = 0;
    let best: bigint | undefined;
    let worst: bigint | undefined;
    let fees = 0n;
    let turnover = 0n;
    const equityAt = (final: boolean) => {
      let v = cash;
      for (const [s, b] of books) v += mul(b.qty, final ? marks.get(s)! : b.lastPrice);
      return v;
    };
    const step = (equity: bigint) => {
      if (equity > peak) peak = equity;
      if (peak - equity > drawdown) {
        drawdown = peak - equity;
        drawdownPct = pct(drawdown, peak);
      }
    };
    for (const f of fills as FillRow[]) {
      if (!books.has(f.symbol)) books.set(f.symbol, this.deps.portfolio.empty());
      const b = books.get(f.symbol)!;
      const before = b.realized;
      applyFill(b, f);
      const n = dec(f.notional);
      const fee = dec(f.fee);
      fees += fee;
      turnover += n;
      cash += f.side === 'buy' ? -n - fee : n - fee;
      if (f.side === 'sell') {
        const r = b.realized - before - fee;
        if (r > 0n) wins++;
        else losses++;
        if (best === undefined || r > best) best = r;
        if (worst === undefined || r < worst) worst = r;
      }
      step(equityAt(false));
    }
    const equity = equityAt(true);
    step(equity);
    const closing = wins + losses;
    return {
      since: since.toISOString(),
      startingCash: money(start),
      equity: money(equity),
      totalReturn: money(equity - start),
      totalReturnPct: pct(equity - start, start),
      maxDrawdown: money(drawdown),
      maxDrawdownPct: drawdownPct,
      closingTrades: closing,
      winningTrades: wins,
      losingTrades: losses,
      winRate: closing ? Math.round((wins / closing) * 10_000) / 10_000 : undefined,
      bestTrade: best === undefined ? undefined : money(best),
      worstTrade: worst === undefined ? undefined : money(worst),
      fees: money(fees),
      turnover: money(turnover),
    };
  }

  async allocation(p: Principal, venue: string) {
    this.deps.market.venue(venue);
    const { books, cash, marks } = await this.deps.portfolio.state(p.accountId);
    const rows = [{ asset: 'USD', symbol: '', value: cash }];
    for (const [s, b] of books) if (b.qty > 0n) rows.push({ asset: this.deps.portfolio.baseOf(s), symbol: s, value: mul(b.qty, marks.get(s)!) });
    const equity = rows.reduce((t, r) => t + r.value, 0n);
    const positions = rows.slice(1).sort((a, b) => (b.value > a.value ? 1 : b.value < a.value ? -1 : 0));
    const largest = positions[0];
    return {
      equity: money(equity),
      rows: [rows[0]!, ...positions].map((r) => ({ asset: r.asset, symbol: r.symbol, value: money(r.value), weightPct: pct(r.value, equity) })),
      cashPct: pct(cash, equity),
      largest: largest?.symbol,
      largestPct: largest ? pct(largest.value, equity) : 0,
    };
  }

  async fill(p: Principal, id: string): Promise<FillRow> {
    const f = await this.deps.views.fill(this.deps.sql, p.accountId, id);
    if (!f) throw notFound('The fill');
    return f;
  }
}
