import { actorOf, enqueueEvent, invalid, newId, notFound, type Principal, type Sql } from '@svc/kit';

import { fromUnits, SCALE, toUnits } from '../inference/cost.js';
import { SCHEMA } from '../models/store.js';
import { cursorOf, page } from '../usage/usage.js';
import type { CreditAlertRow, CreditAlertStore } from './alerts-store.js';
import { CURRENCY, decimal } from './credits.js';

/**
 * Low-balance alerts on credits (docs/models.md, "Credits"): an alert triggers once when the
 * account's balance is at or below its threshold — checked after each charge, and when the alert
 * is created, changed or read — and publishes `svc.models.credits.low`. Changing it arms it again.
 */

const AMOUNT = new RegExp(`^\\d{1,7}(\\.\\d{1,${SCALE}})?$`);

function threshold(v: string): string {
  if (!AMOUNT.test(v)) throw invalid(`threshold: must be a decimal amount of at least 0 with at most ${SCALE} decimal places ("5", "0.5").`);
  return fromUnits(toUnits(v));
}

function note(v: string | undefined | null): string | null {
  const n = v?.trim() || null;
  if (n && n.length > 200) throw invalid('note: must be at most 200 characters.');
  return n;
}

export class CreditAlerts {
  constructor(private readonly deps: { sql: Sql; store: CreditAlertStore; balance: (accountId: string) => Promise<string>; kick(): void }) {}

  /** Triggers what the balance now satisfies (after a charge, or before a read). */
  async check(accountId: string, balance?: string): Promise<void> {
    const b = balance ?? (await this.deps.balance(accountId));
    const hit = await this.deps.sql.tx(async (q) => {
      const rows = await this.deps.store.trigger(q, accountId, b);
      for (const r of rows)
        await enqueueEvent(q, SCHEMA, {
          subject: 'models.credits.low',
          accountId,
          data: { alertId: r.id, threshold: decimal(r.threshold), balance: decimal(b), currency: CURRENCY },
        });
      return rows.length;
    });
    if (hit) this.deps.kick();
  }

  async create(p: Principal, input: { threshold: string; note?: string }): Promise<CreditAlertRow> {
    const t = threshold(input.threshold);
    const n = note(input.note);
    const row = await this.deps.sql.tx(async (q) => {
      const r = await this.deps.store.insert(q, { id: newId('cral'), accountId: p.accountId, threshold: t, note: n });
      await enqueueEvent(q, SCHEMA, {
        subject: 'models.credit_alert.created',
        accountId: p.accountId,
        data: { id: r.id, threshold: t, actor: actorOf(p) },
      });
      return r;
    });
    this.deps.kick();
    await this.check(p.accountId);
    return this.get(p, row.id);
  }

  async list(p: Principal, f: { status?: string; cursor?: string }, limit: number) {
    if (f.status && f.status !== 'active' && f.status !== 'triggered') throw invalid('status: must be "active" or "triggered".');
    await this.check(p.accountId);
    return page(await this.deps.store.list(p.accountId, f.status, cursorOf('cral', f.cursor), limit), limit);
  }

  async get(p: Principal, id: string): Promise<CreditAlertRow> {
    const row = await this.deps.store.get(this.deps.sql, p.accountId, id);
    if (!row) throw notFound('The credit alert');
    return row;
  }

  async update(p: Principal, id: string, input: { threshold?: string; note?: string; clearNote: boolean }): Promise<CreditAlertRow> {
    if (input.threshold === undefined && input.note === undefined && !input.clearNote)
      throw invalid('Name at least one of threshold, note to change.');
    const t = input.threshold === undefined ? undefined : threshold(input.threshold);
    await this.deps.sql.tx(async (q) => {
      const a = await this.deps.store.get(q, p.accountId, id, true);
      if (!a) throw notFound('The credit alert');
      const r = await this.deps.store.update(
        q,
        p.accountId,
        id,
        t ?? a.threshold,
        input.clearNote ? null : input.note !== undefined ? note(input.note) : a.note,
      );
      await enqueueEvent(q, SCHEMA, {
        subject: 'models.credit_alert.updated',
        accountId: p.accountId,
        data: { id, threshold: decimal(r!.threshold), actor: actorOf(p) },
      });
    });
    this.deps.kick();
    await this.check(p.accountId);
    return this.get(p, id);
  }

  async remove(p: Principal, id: string): Promise<void> {
    await this.deps.sql.tx(async (q) => {
      if (!(await this.deps.store.remove(q, p.accountId, id))) throw notFound('The credit alert');
      await enqueueEvent(q, SCHEMA, { subject: 'models.credit_alert.deleted', accountId: p.accountId, data: { id, actor: actorOf(p) } });
    });
    this.deps.kick();
  }
}
