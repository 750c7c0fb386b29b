import { USE_CASES } from '@svc/contract';
import { DomainError, invalid, type Principal } from '@svc/kit';

import { costOf, fromUnits, toUnits } from '../inference/cost.js';
import type { Catalogue, CatalogueModel } from '../models/catalogue.js';
import type { ModelsDomain, ModelView } from '../models/models.js';

/**
 * Choosing a model (docs/models.md, "Choosing a model"): one record, one family, the cost of calls,
 * a token estimate, models side by side, and a ranked recommendation for a use case and budget.
 * All of it from the catalogue and the caller's availability; nothing is called.
 */

/** Tokens of a text, estimated as the development model and usage fallback count them: one per 4 characters, rounded up. */
export const estimateTokens = (text: string) => Math.ceil([...text].length / 4);

const MAX_TOKENS = 100_000_000;

function tokens(field: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_TOKENS) throw invalid(`${field}: must be a whole number from 0 to ${MAX_TOKENS}.`);
  return n;
}

export class Advisor {
  constructor(
    private readonly catalogue: Catalogue,
    private readonly domain: ModelsDomain,
    /** Whether the caller's calls of a model would be paid with credits (the platform's key serving a priced model). */
    private readonly paidWithCredits: (p: Principal, m: CatalogueModel) => Promise<boolean>,
  ) {}

  private record(id: string): CatalogueModel {
    const m = this.catalogue.models.find((x) => x.id === id);
    if (!m) throw new DomainError('not_found', 'model_not_found', `No model "${id}" in the catalogue (GET /models/catalog lists them).`);
    return m;
  }

  private async views(p: Principal): Promise<Map<string, ModelView>> {
    return new Map((await this.domain.catalog(p)).map((m) => [m.id, m]));
  }

  async get(p: Principal, id: string): Promise<ModelView> {
    this.record(id);
    return (await this.views(p)).get(id)!;
  }

  async family(p: Principal, id: string) {
    const f = this.catalogue.families.find((x) => x.id === id);
    if (!f) throw new DomainError('not_found', 'family_not_found', `No family "${id}" (GET /models/families lists them).`);
    const views = await this.views(p);
    return { family: f, models: f.members.map((m) => views.get(m)!) };
  }

  async estimate(p: Principal, req: { model: string; inputTokens: number; outputTokens: number; calls: number }) {
    const m = this.record(req.model);
    const input = tokens('inputTokens', req.inputTokens);
    const output = tokens('outputTokens', req.outputTokens);
    const calls = req.calls || 1;
    if (!Number.isSafeInteger(calls) || calls < 1 || calls > 1_000_000) throw invalid('calls: must be a whole number from 1 to 1000000.');
    const inputCost = costOf(m.pricing, input, 0);
    const outputCost = costOf(m.pricing, 0, output);
    const per = costOf(m.pricing, input, output);
    const warnings: string[] = [];
    if (input + output > m.contextWindow) warnings.push(`${input + output} tokens exceed the context window of ${m.contextWindow}.`);
    if (m.maxOutputTokens && output > m.maxOutputTokens) warnings.push(`${output} output tokens exceed the model's limit of ${m.maxOutputTokens}.`);
    if (m.deprecated) warnings.push(`${m.id} is deprecated${m.replacedBy ? `; use ${m.replacedBy}` : ''}.`);
    return {
      model: m.id,
      inputCost,
      outputCost,
      costPerCall: per,
      total: fromUnits(toUnits(per) * BigInt(calls)),
      currency: m.pricing.currency,
      calls,
      paidWithCredits: await this.paidWithCredits(p, m),
      fits: warnings.every((w) => !w.includes('exceed')),
      warnings,
    };
  }

  count(req: { model?: string; text: string }) {
    if (req.text.length > 4_000_000) throw invalid('text: at most 4,000,000 characters.');
    const n = estimateTokens(req.text);
    const base = { tokens: n, characters: [...req.text].length, method: 'estimate: one token per 4 characters, rounded up' };
    if (!req.model) return base;
    const m = this.record(req.model);
    return { ...base, model: m.id, contextWindow: m.contextWindow, remaining: m.contextWindow - n, fits: n <= m.contextWindow };
  }

  /**
   * Cuts a text to a token budget (the estimate of `count`): `maxTokens`, or a model's context
   * window less `reserveOutputTokens`; keeps the start or the end, never splitting a character.
   */
  truncate(req: { text: string; maxTokens: number; model?: string; reserveOutputTokens: number; keep: string }) {
    if (req.text.length > 4_000_000) throw invalid('text: at most 4,000,000 characters.');
    if (req.keep !== 'start' && req.keep !== 'end') throw invalid('keep: must be "start" or "end".');
    let max = req.maxTokens;
    if (req.model) {
      const m = this.record(req.model);
      const room = m.contextWindow - tokens('reserveOutputTokens', req.reserveOutputTokens);
      max = max > 0 ? Math.min(max, room) : room;
    }
    if (!Number.isSafeInteger(max) || max < 1)
      throw invalid('maxTokens: give a budget of at least 1 token, or a model whose context window leaves room.');
    const chars = [...req.text];
    const original = Math.ceil(chars.length / 4);
    const truncated = original > max;
    const kept = truncated ? (req.keep === 'start' ? chars.slice(0, max * 4) : chars.slice(chars.length - max * 4)) : chars;
    return {
      text: kept.join(''),
      tokens: Math.ceil(kept.length / 4),
      originalTokens: original,
      truncated,
      maxTokens: max,
      method: 'estimate: one token per 4 characters, rounded up',
    };
  }

  async compare(p: Principal, req: { ids: string[]; inputTokens: number; outputTokens: number }) {
    const ids = [...new Set(req.ids)];
    if (ids.length < 2 || ids.length > 10) throw invalid('ids: name 2 to 10 different models.');
    const input = tokens('inputTokens', req.inputTokens);
    const output = tokens('outputTokens', req.outputTokens);
    for (const id of ids) this.record(id);
    const views = await this.views(p);
    const rows = ids.map((id) => ({ model: views.get(id)!, costPerCall: costOf(views.get(id)!.pricing, input, output) }));
    const sorted = [...rows].sort((a, b) =>
      toUnits(a.costPerCall) < toUnits(b.costPerCall) ? -1 : toUnits(a.costPerCall) > toUnits(b.costPerCall) ? 1 : 0,
    );
    return {
      models: rows.map((r) => ({ ...r, costRank: sorted.findIndex((x) => toUnits(x.costPerCall) === toUnits(r.costPerCall)) + 1 })),
      inputTokens: input,
      outputTokens: output,
    };
  }

  /**
   * Models that fit the use case and needs, ranked: available before unavailable, then by the
   * cost of the expected call (cheapest first), then by context window (largest first).
   */
  async recommend(
    p: Principal,
    req: {
      useCase: string;
      tools: boolean;
      vision: boolean;
      structuredOutput: boolean;
      minContext: number;
      inputTokens: number;
      outputTokens: number;
      maxCostPerCall?: string;
      availableOnly: boolean;
      limit: number;
    },
  ) {
    if (!(USE_CASES as readonly string[]).includes(req.useCase)) throw invalid(`useCase: must be one of ${USE_CASES.join(', ')}.`);
    const input = tokens('inputTokens', req.inputTokens);
    const output = tokens('outputTokens', req.outputTokens);
    tokens('minContext', req.minContext);
    let budget: bigint | undefined;
    if (req.maxCostPerCall !== undefined) {
      if (!/^\d{1,7}(\.\d{1,12})?$/.test(req.maxCostPerCall)) throw invalid('maxCostPerCall: must be a decimal amount such as "0.01".');
      budget = toUnits(req.maxCostPerCall);
    }
    const excluded: string[] = [];
    const fits = [];
    for (const m of (await this.domain.catalog(p)).filter((x) => !x.deprecated)) {
      const why: string[] = [];
      if (!m.useCases.includes(req.useCase as never)) continue;
      if (req.tools && !m.capabilities.tools) why.push('no tool calls');
      if (req.vision && !m.capabilities.vision) why.push('no images');
      if (req.structuredOutput && !m.capabilities.structuredOutput) why.push('no structured output');
      if (m.contextWindow < Math.max(req.minContext, input + output)) why.push(`context window ${m.contextWindow}`);
      const cost = costOf(m.pricing, input, output);
      if (budget !== undefined && toUnits(cost) > budget) why.push(`a call costs ${cost}`);
      if (req.availableOnly && !m.available) why.push('not available to this account');
      if (why.length) {
        excluded.push(`${m.id}: ${why.join(', ')}`);
        continue;
      }
      const reasons = [`${req.useCase}`, `${m.contextWindow} tokens of context`, cost === '0' ? 'free' : `${cost} ${m.pricing.currency} per call`];
      if (m.available) reasons.push('available now');
      else reasons.push(m.unavailableReason?.message ?? 'not available');
      fits.push({ model: m, costPerCall: cost, reasons });
    }
    fits.sort(
      (a, b) =>
        Number(b.model.available) - Number(a.model.available) ||
        (toUnits(a.costPerCall) < toUnits(b.costPerCall) ? -1 : toUnits(a.costPerCall) > toUnits(b.costPerCall) ? 1 : 0) ||
        b.model.contextWindow - a.model.contextWindow,
    );
    const limit = req.limit || 5;
    return { models: fits.slice(0, limit).map((f, i) => ({ ...f, score: fits.length - i })), excluded };
  }
}
