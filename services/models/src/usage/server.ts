import type { Handlers } from '@svc/kit';
import type { models } from '@svc/proto';

import type { CreditAlerts } from '../credits/alerts.js';
import type { CreditAlertRow } from '../credits/alerts-store.js';
import { decimal } from '../credits/credits.js';
import type { CreditEntryRow } from '../credits/store.js';
import type { CreditViews } from '../credits/views.js';
import type { ModelView } from '../models/models.js';
import type { Advisor } from './advisor.js';
import type { UsageRow } from './store.js';
import type { Usage } from './usage.js';

type Def = typeof models.ModelsServiceService;

/** The handlers of usage.proto's operations: choosing a model, usage, providers, credit views. */
export type ViewHandlers = Pick<
  Handlers<Def>,
  | 'getModel'
  | 'getFamily'
  | 'estimateCost'
  | 'countTokens'
  | 'truncateText'
  | 'compareModels'
  | 'recommend'
  | 'listUsage'
  | 'getUsage'
  | 'usageSummary'
  | 'listProviders'
  | 'listCreditEntries'
  | 'getCreditEntry'
  | 'creditSummary'
  | 'creditForecast'
  | 'createCreditAlert'
  | 'listCreditAlerts'
  | 'getCreditAlert'
  | 'updateCreditAlert'
  | 'deleteCreditAlert'
>;

const toUsage = (u: UsageRow) => ({
  id: u.id,
  model: u.model,
  provider: u.provider,
  inputTokens: Number(u.input_tokens),
  outputTokens: Number(u.output_tokens),
  cost: decimal(u.cost),
  currency: u.currency,
  ownKey: u.own_key,
  charged: u.charged,
  chargeKey: u.charge_key,
  finishReason: u.finish_reason,
  actorKind: u.actor.kind,
  actorId: u.actor.id,
  createdAt: u.created_at.toISOString(),
});

const toAlert = (a: CreditAlertRow) => ({
  id: a.id,
  threshold: decimal(a.threshold),
  note: a.note ?? undefined,
  status: a.status,
  triggeredAt: a.triggered_at ? new Date(a.triggered_at).toISOString() : undefined,
  triggeredBalance: a.triggered_balance === null ? undefined : decimal(a.triggered_balance),
  createdAt: new Date(a.created_at).toISOString(),
  updatedAt: new Date(a.updated_at).toISOString(),
});

/** server.ts's messages (passed in: server.ts imports this module's types). */
interface Messages {
  toModel: (m: ModelView) => models.Model;
  toCreditEntry: (e: CreditEntryRow) => models.CreditEntry;
}

export function viewHandlers(advisor: Advisor, usage: Usage, credits: CreditViews, alerts: CreditAlerts, m: Messages): ViewHandlers {
  const { toModel, toCreditEntry } = m;
  return {
    async getModel(req, { principal }) {
      return { model: toModel(await advisor.get(principal, req.id)) };
    },
    async getFamily(req, { principal }) {
      const r = await advisor.family(principal, req.id);
      return { family: { ...r.family }, models: r.models.map(toModel) };
    },
    async estimateCost(req, { principal }) {
      return advisor.estimate(principal, {
        model: req.model,
        inputTokens: Number(req.inputTokens),
        outputTokens: Number(req.outputTokens),
        calls: req.calls,
      });
    },
    async countTokens(req) {
      return advisor.count(req);
    },
    async truncateText(req) {
      return advisor.truncate({ ...req, maxTokens: Number(req.maxTokens), reserveOutputTokens: Number(req.reserveOutputTokens) });
    },
    async compareModels(req, { principal }) {
      const r = await advisor.compare(principal, { ids: req.ids, inputTokens: Number(req.inputTokens), outputTokens: Number(req.outputTokens) });
      return { ...r, models: r.models.map((m) => ({ model: toModel(m.model), costPerCall: m.costPerCall, costRank: m.costRank })) };
    },
    async recommend(req, { principal }) {
      const r = await advisor.recommend(principal, {
        ...req,
        minContext: Number(req.minContext),
        inputTokens: Number(req.inputTokens),
        outputTokens: Number(req.outputTokens),
      });
      return {
        excluded: r.excluded,
        models: r.models.map((m) => ({ model: toModel(m.model), costPerCall: m.costPerCall, score: m.score, reasons: m.reasons })),
      };
    },
    async listUsage(req, { principal }) {
      const limit = req.limit || 50;
      const { rows, next } = await usage.list(principal, req, limit);
      return { records: rows.map(toUsage), nextCursor: next };
    },
    async getUsage(req, { principal }) {
      return { record: toUsage(await usage.get(principal, req.id)) };
    },
    async usageSummary(req, { principal }) {
      return usage.summary(principal, req.groupBy || 'model', req.start, req.end);
    },
    async listProviders(_req, { principal }) {
      return { providers: await usage.providers(principal) };
    },
    async listCreditEntries(req, { principal }) {
      const limit = req.limit || 50;
      const r = await credits.entries(principal, req, limit);
      return { balance: r.balance, currency: 'USD', entries: r.rows.map(toCreditEntry), nextCursor: r.next };
    },
    async getCreditEntry(req, { principal }) {
      return { entry: toCreditEntry(await credits.entry(principal, req.id)) };
    },
    async creditSummary(req, { principal }) {
      return credits.summary(principal, req.start, req.end);
    },
    async creditForecast(req, { principal }) {
      return credits.forecast(principal, req.days);
    },
    async createCreditAlert(req, { principal }) {
      return { alert: toAlert(await alerts.create(principal, req)) };
    },
    async listCreditAlerts(req, { principal }) {
      const limit = req.limit || 50;
      const { rows, next } = await alerts.list(principal, req, limit);
      return { alerts: rows.map(toAlert), nextCursor: next };
    },
    async getCreditAlert(req, { principal }) {
      return { alert: toAlert(await alerts.get(principal, req.id)) };
    },
    async updateCreditAlert(req, { principal }) {
      return { alert: toAlert(await alerts.update(principal, req.id, req)) };
    },
    async deleteCreditAlert(req, { principal }) {
      await alerts.remove(principal, req.id);
      return {};
    },
  };
}
