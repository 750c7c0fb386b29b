import { actorOf, DomainError, invalid, newId, notFound, type Principal } from '@svc/kit';

import { fromUnits, toUnits } from '../inference/cost.js';
import type { UsageRecorder } from '../inference/infer.js';
import type { Catalogue } from '../models/catalogue.js';
import type { ModelsSettings } from '../settings.js';
import { GROUPS, type UsageRow, type UsageStore } from './store.js';

/**
 * Inference usage (docs/models.md, "Usage"): a record of every call that finished (model, tokens,
 * cost at the catalogue's prices, whose key served it, whether credits paid), their summaries, and
 * each provider's status for the account (which key would serve it, its last error).
 */

const DAY = 86_400_000;
const PROVIDER_CODES = new Set([
  'provider_key_invalid',
  'provider_rate_limited',
  'provider_rejected',
  'provider_unavailable',
  'model_unavailable',
  'address_not_allowed',
]);

export function range(start: string | undefined, end: string | undefined, days: number): { from: Date; to: Date } {
  const to = end ? new Date(end) : new Date(Date.now() + 1000);
  const from = start ? new Date(start) : new Date(to.getTime() - days * DAY);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw invalid('start, end: must be ISO 8601 times.');
  if (from >= to) throw invalid('start: must be before end.');
  return { from, to };
}

export const cursorOf = (prefix: string, c: string | undefined): string | undefined => {
  if (!c) return undefined;
  const id = Buffer.from(c, 'base64url').toString('utf8');
  if (!new RegExp(`^${prefix}_[0-9a-z]{26}$`).test(id)) throw invalid('cursor: is not a cursor this list gave.', 'invalid_cursor');
  return id;
};

export function page<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next?: string } {
  const out = rows.slice(0, limit);
  return { rows: out, next: rows.length > limit ? Buffer.from(out[out.length - 1]!.id).toString('base64url') : undefined };
}

export class Usage implements UsageRecorder {
  constructor(
    private readonly deps: {
      store: UsageStore;
      catalogue: Catalogue;
      settings: ModelsSettings;
      keyedProviders: (p: Principal) => Promise<Set<string>>;
      log?: { warn(o: object, m: string): void };
    },
  ) {}

  async record(p: Principal, u: Parameters<UsageRecorder['record']>[1]): Promise<void> {
    try {
      await this.deps.store.insert(this.deps.store.sql, {
        id: newId('use'),
        account_id: p.accountId,
        model: u.model,
        provider: u.provider,
        input_tokens: u.inputTokens,
        output_tokens: u.outputTokens,
        cost: u.cost,
        currency: u.currency,
        own_key: u.ownKey,
        charged: u.charged,
        charge_key: u.chargeKey,
        finish_reason: u.finishReason,
        actor: actorOf(p),
      });
    } catch (err) {
      // A record that cannot be written does not fail the call that was made (and charged).
      this.deps.log?.warn({ err }, 'a usage record was not written');
    }
  }

  async failed(p: Principal, provider: string, err: unknown): Promise<void> {
    if (!(err instanceof DomainError) || !PROVIDER_CODES.has(err.code)) return;
    await this.deps.store.recordError(p.accountId, provider, err.code, err.message).catch(() => undefined);
  }

  async list(p: Principal, f: { model?: string; agentId?: string; start?: string; end?: string; cursor?: string }, limit: number) {
    if (f.start && f.end && Date.parse(f.start) >= Date.parse(f.end)) throw invalid('start: must be before end.');
    return page(await this.deps.store.list(p.accountId, { ...f, before: cursorOf('use', f.cursor) }, limit), limit);
  }

  async get(p: Principal, id: string): Promise<UsageRow> {
    const row = await this.deps.store.get(p.accountId, id);
    if (!row) throw notFound('The usage record');
    return row;
  }

  async summary(p: Principal, groupBy: string, start?: string, end?: string) {
    if (!GROUPS[groupBy]) throw invalid(`groupBy: must be one of ${Object.keys(GROUPS).join(', ')}.`);
    const { from, to } = range(start, end, 30);
    const rows = await this.deps.store.summary(p.accountId, groupBy, from, to);
    const groups = rows.map((r) => ({
      key: r.key,
      calls: Number(r.calls),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cost: fromUnits(toUnits(r.cost)),
      charged: fromUnits(toUnits(r.charged)),
    }));
    const totals = groups.reduce(
      (t, g) => ({
        key: 'total',
        calls: t.calls + g.calls,
        inputTokens: t.inputTokens + g.inputTokens,
        outputTokens: t.outputTokens + g.outputTokens,
        cost: fromUnits(toUnits(t.cost) + toUnits(g.cost)),
        charged: fromUnits(toUnits(t.charged) + toUnits(g.charged)),
      }),
      { key: 'total', calls: 0, inputTokens: 0, outputTokens: 0, cost: '0', charged: '0' },
    );
    return { groupBy, groups, totals, start: from.toISOString(), end: to.toISOString() };
  }

  /** Each provider of the catalogue: which key would serve the account's calls, and its last error and use. */
  async providers(p: Principal) {
    const { catalogue, settings } = this.deps;
    const keyed = await this.deps.keyedProviders(p);
    const [errors, used] = await Promise.all([this.deps.store.errors(p.accountId), this.deps.store.lastUsed(p.accountId)]);
    const ids = [...new Set(catalogue.models.map((m) => m.provider))];
    return ids.map((provider) => {
      const own = keyed.has(provider);
      const platform = Boolean(settings.providers[provider]?.key);
      const builtIn = provider === 'svc';
      const servedBy = builtIn ? 'built_in' : own ? 'own_key' : platform ? 'platform_key' : 'none';
      const e = errors.get(provider);
      return {
        provider,
        models: catalogue.models.filter((m) => m.provider === provider && !m.deprecated).length,
        platformKey: platform,
        ownKey: own,
        servedBy,
        available: servedBy !== 'none',
        lastError: e ? { code: e.code, message: e.message, at: e.at.toISOString() } : undefined,
        lastUsedAt: used.get(provider)?.toISOString(),
      };
    });
  }
}
