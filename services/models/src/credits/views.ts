import { invalid, notFound, type Principal } from '@svc/kit';

import { fromUnits, toUnits } from '../inference/cost.js';
import type { UsageStore } from '../usage/store.js';
import { cursorOf, page, range } from '../usage/usage.js';
import { CURRENCY, decimal } from './credits.js';
import type { CreditStore } from './store.js';

/**
 * Views of the credit ledger (docs/models.md, "Credits"): entries filtered, one entry, a summary by
 * day and model, and a forecast of when the balance runs out at the recent rate of spending.
 */

const DAY = 86_400_000;

export class CreditViews {
  constructor(private readonly deps: { usage: UsageStore; credits: CreditStore }) {}

  async entries(p: Principal, f: { kind?: string; model?: string; start?: string; end?: string; cursor?: string }, limit: number) {
    if (f.kind && f.kind !== 'grant' && f.kind !== 'charge') throw invalid('kind: must be "grant" or "charge".');
    if (f.start && f.end && Date.parse(f.start) >= Date.parse(f.end)) throw invalid('start: must be before end.');
    const [balance, rows] = await Promise.all([
      this.deps.credits.balance(p.accountId),
      this.deps.usage.creditEntries(p.accountId, { ...f, before: cursorOf('crd', f.cursor) }, limit),
    ]);
    return { balance: decimal(balance), ...page(rows, limit) };
  }

  async entry(p: Principal, id: string) {
    const row = await this.deps.usage.creditEntry(p.accountId, id);
    if (!row) throw notFound('The credit entry');
    return row;
  }

  async summary(p: Principal, start?: string, end?: string) {
    const { from, to } = range(start, end, 30);
    const [days, models, balance] = await Promise.all([
      this.deps.usage.creditDays(p.accountId, from, to),
      this.deps.usage.creditModels(p.accountId, from, to),
      this.deps.credits.balance(p.accountId),
    ]);
    const granted = days.reduce((t, d) => t + toUnits(d.granted), 0n);
    const spent = days.reduce((t, d) => t + toUnits(d.spent), 0n);
    return {
      granted: fromUnits(granted),
      spent: fromUnits(spent),
      net: fromUnits(granted - spent),
      days: days.map((d) => ({ day: d.day, granted: decimal(d.granted), spent: decimal(d.spent) })),
      models: models.map((m) => ({ model: m.model, spent: decimal(m.spent), calls: Number(m.calls) })),
      balance: decimal(balance),
      currency: CURRENCY,
    };
  }

  /** The spending of the last `days` days, averaged per day, and when the balance would run out at that rate. */
  async forecast(p: Principal, days: number) {
    const window = days || 7;
    if (!Number.isInteger(window) || window < 1 || window > 90) throw invalid('days: must be from 1 to 90.');
    const now = Date.now();
    const [rows, balance] = await Promise.all([
      this.deps.usage.creditDays(p.accountId, new Date(now - window * DAY), new Date(now + 1000)),
      this.deps.credits.balance(p.accountId),
    ]);
    const spent = rows.reduce((t, d) => t + toUnits(d.spent), 0n);
    const daily = spent / BigInt(window);
    const bal = toUnits(balance);
    const daysLeft = daily > 0n ? (bal <= 0n ? 0 : Number((bal * 1000n) / daily) / 1000) : undefined;
    return {
      balance: fromUnits(bal),
      currency: CURRENCY,
      windowDays: window,
      spentInWindow: fromUnits(spent),
      dailyAverage: fromUnits(daily),
      daysLeft,
      runsOutAt: daysLeft === undefined ? undefined : new Date(now + daysLeft * DAY).toISOString(),
      projected30d: fromUnits(daily * 30n),
    };
  }
}
