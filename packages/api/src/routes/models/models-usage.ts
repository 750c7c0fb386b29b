import { z } from 'zod';

import type { models_usage } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route } from '../../route.js';
import { CatalogueSlug, ModelFamily, ModelRecord } from '../../schemas/models.js';
import {
  ComparedModel,
  CostEstimate,
  ModelId,
  ProviderStatus,
  Recommendation,
  RecommendBody,
  TokenCount,
  TokenCountQuery,
  TokenCountResult,
  UsageGroup,
  UsageRecord,
} from '../../schemas/models-usage.js';
import { modelJson } from './models.js';

/**
 * Choosing a model and inference usage (docs/models.md, "Choosing a model", "Usage"): one model,
 * one family, a cost estimate, a token count, comparison, recommendation; usage records, their
 * summary, and the providers' status. `GET /models/:id` is last: the static paths go first.
 */

const common = { tag: 'models', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const UsageId = prefixedId('use', 'a usage record id');
const Iso = z.iso.datetime();

const usageJson = (u: models_usage.UsageRecord) => ({
  id: u.id,
  model: u.model,
  provider: u.provider,
  inputTokens: Number(u.inputTokens),
  outputTokens: Number(u.outputTokens),
  cost: u.cost,
  currency: u.currency,
  ownKey: u.ownKey,
  charged: u.charged,
  chargeKey: u.chargeKey,
  finishReason: u.finishReason,
  actor: { kind: u.actorKind, id: u.actorId },
  createdAt: u.createdAt,
});
const groupJson = (g: models_usage.UsageGroup) => ({
  ...g,
  calls: Number(g.calls),
  inputTokens: Number(g.inputTokens),
  outputTokens: Number(g.outputTokens),
});

export const modelsUsageRoutes = [
  route({
    ...common,
    id: 'models.family',
    method: 'get',
    path: '/models/families/:id',
    summary: 'One family of models with the full records of its members (404 `family_not_found`).',
    errors: ['family_not_found'],
    params: z.object({ id: CatalogueSlug.describe('A family id (GET /models/families).') }),
    response: z.object({ family: ModelFamily, models: z.array(ModelRecord) }).meta({ id: 'ModelFamilyDetail' }),
    handler: {
      rpc: 'models.getFamily',
      request: (i) => ({ id: i.params.id }),
      response: (r) => ({ family: { ...r.family! }, models: r.models.map(modelJson) }),
    },
  }),
  route({
    ...common,
    id: 'models.estimateCost',
    method: 'post',
    effect: 'reads',
    path: '/models/cost-estimate',
    summary: "The cost of calls of a model at the catalogue's prices, whether credits would pay, and whether the tokens fit.",
    errors: ['model_not_found'],
    body: z
      .object({
        model: ModelId,
        inputTokens: TokenCount.describe('Input tokens of one call.'),
        outputTokens: TokenCount.default(0).describe('Output tokens of one call.'),
        calls: z.number().int().min(1).max(1_000_000).default(1).describe('How many such calls.'),
      })
      .meta({ id: 'EstimateModelCost' }),
    response: CostEstimate,
    handler: { rpc: 'models.estimateCost', request: (i) => ({ ...i.body }) },
  }),
  route({
    ...common,
    id: 'models.countTokens',
    method: 'post',
    effect: 'reads',
    path: '/models/tokens/count',
    summary:
      "Estimate the tokens of a text (one token per 4 characters: an estimate, not the provider's tokenizer) and, with a model, whether it fits its context window.",
    body: z.object({ text: z.string().max(4_000_000).describe('The text.'), model: ModelId.optional() }).meta({ id: 'CountModelTokens' }),
    bodyLimit: '16mb',
    response: TokenCountResult,
    handler: {
      rpc: 'models.countTokens',
      request: (i) => ({ text: i.body.text, model: i.body.model }),
      response: (r) => ({
        ...r,
        tokens: Number(r.tokens),
        characters: Number(r.characters),
        contextWindow: r.contextWindow === undefined ? undefined : Number(r.contextWindow),
        remaining: r.remaining === undefined ? undefined : Number(r.remaining),
      }),
    },
  }),
  route({
    ...common,
    id: 'models.truncateText',
    method: 'post',
    effect: 'reads',
    path: '/models/tokens/truncate',
    summary:
      "Cut a text to a token budget (estimated at one token per 4 characters, not the provider's tokenizer): `maxTokens`, or a model's context window less the tokens reserved for output; keeps the start or the end.",
    body: z
      .object({
        text: z.string().max(4_000_000).describe('The text.'),
        maxTokens: TokenCount.default(0).describe('The budget in tokens (with a model: at most its context window less `reserveOutputTokens`).'),
        model: ModelId.optional().describe("Fit the model's context window."),
        reserveOutputTokens: TokenCount.default(0).describe('Tokens to leave for the answer (with a model).'),
        keep: z.enum(['start', 'end']).default('start').describe('Which part to keep.'),
      })
      .meta({ id: 'TruncateText' }),
    bodyLimit: '16mb',
    response: z
      .object({
        text: z.string(),
        tokens: z.number().int(),
        originalTokens: z.number().int(),
        truncated: z.boolean(),
        maxTokens: z.number().int().describe('The budget applied.'),
        method: z.string(),
      })
      .meta({ id: 'TruncatedText' }),
    handler: {
      rpc: 'models.truncateText',
      request: (i) => ({
        text: i.body.text,
        maxTokens: i.body.maxTokens,
        model: i.body.model,
        reserveOutputTokens: i.body.reserveOutputTokens,
        keep: i.body.keep,
      }),
      response: (r) => ({ ...r, tokens: Number(r.tokens), originalTokens: Number(r.originalTokens), maxTokens: Number(r.maxTokens) }),
    },
  }),
  route({
    ...common,
    id: 'models.compare',
    method: 'get',
    path: '/models/compare',
    summary: 'Models side by side (2 to 10): their records and the cost of one reference call, ranked by cost.',
    errors: ['model_not_found'],
    query: z.object({
      ids: z
        .string()
        .max(1000)
        .regex(
          /^\s*[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9.-]*(?:\s*,\s*[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9.-]*){1,9}\s*$/,
          'must be 2 to 10 model ids separated by commas, such as "openai/gpt-4o,anthropic/claude-sonnet-4"',
        )
        .transform((s) =>
          s
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean),
        )
        .pipe(z.array(ModelId).min(2).max(10))
        .describe('Comma-separated model ids, e.g. `openai/gpt-4o,anthropic/claude-sonnet-4`.'),
      inputTokens: TokenCountQuery.default(1000).describe('Input tokens of the reference call.'),
      outputTokens: TokenCountQuery.default(500).describe('Output tokens of the reference call.'),
    }),
    response: z
      .object({ models: z.array(ComparedModel), inputTokens: z.number().int(), outputTokens: z.number().int() })
      .meta({ id: 'ModelComparison' }),
    handler: {
      rpc: 'models.compareModels',
      request: (i) => ({ ids: i.query.ids, inputTokens: i.query.inputTokens, outputTokens: i.query.outputTokens }),
      response: (r) => ({
        models: r.models.map((m) => ({ model: modelJson(m.model!), costPerCall: m.costPerCall, costRank: m.costRank })),
        inputTokens: Number(r.inputTokens),
        outputTokens: Number(r.outputTokens),
      }),
    },
  }),
  route({
    ...common,
    id: 'models.recommend',
    method: 'post',
    effect: 'reads',
    path: '/models/recommend',
    summary:
      'Recommend models for a use case, needs (tools, vision, structured output, context) and budget: ranked available first, then by the cost of the expected call; with why the others were left out.',
    body: RecommendBody,
    response: z
      .object({
        models: z.array(Recommendation),
        excluded: z.array(z.string()).describe('`<model>: <why>` for each model of the use case left out.'),
      })
      .meta({ id: 'ModelRecommendations' }),
    handler: {
      rpc: 'models.recommend',
      request: (i) => ({ ...i.body }),
      response: (r) => ({
        models: r.models.map((m) => ({ model: modelJson(m.model!), costPerCall: m.costPerCall, score: m.score, reasons: m.reasons })),
        excluded: r.excluded,
      }),
    },
  }),
  route({
    ...common,
    id: 'models.usage.list',
    method: 'get',
    path: '/models/usage',
    summary: "The acting account's inference usage, newest first: one record per model call (tokens, cost, whose key, whether credits paid).",
    errors: ['invalid_cursor'],
    query: ListQuery.extend({
      model: ModelId.optional(),
      agentId: prefixedId('agt', 'an agent id').optional().describe("Only this agent's calls."),
      start: Iso.optional().describe('From this time, inclusive (ISO 8601, UTC).'),
      end: Iso.optional().describe('Until this time, exclusive (ISO 8601, UTC).'),
    }),
    response: z.object({ records: z.array(UsageRecord), nextCursor: Nullable(z.string()) }).meta({ id: 'ModelUsageList' }),
    handler: {
      rpc: 'models.listUsage',
      request: (i) => ({
        model: i.query.model,
        agentId: i.query.agentId,
        start: i.query.start,
        end: i.query.end,
        limit: i.query.limit,
        cursor: i.query.cursor,
      }),
      response: (r) => ({ records: r.records.map(usageJson), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'models.usage.summary',
    method: 'get',
    path: '/models/usage/summary',
    summary: 'Usage totals (calls, tokens, cost, the part paid with credits) grouped by model, provider, UTC day or caller.',
    query: z.object({
      groupBy: z.enum(['model', 'provider', 'day', 'agent']).default('model').describe('What each row of the summary totals (default model).'),
      start: Iso.optional().describe('Default 30 days before `end`.'),
      end: Iso.optional().describe('Default now.'),
    }),
    response: z
      .object({ groupBy: z.string(), groups: z.array(UsageGroup), totals: UsageGroup, start: z.string(), end: z.string() })
      .meta({ id: 'ModelUsageSummary' }),
    handler: {
      rpc: 'models.usageSummary',
      request: (i) => ({ groupBy: i.query.groupBy, start: i.query.start, end: i.query.end }),
      response: (r) => ({ ...r, groups: r.groups.map(groupJson), totals: groupJson(r.totals!) }),
    },
  }),
  route({
    ...common,
    id: 'models.usage.get',
    method: 'get',
    path: '/models/usage/:id',
    summary: 'One model usage record: the model, tokens in and out, cost in credits, and who made the call.',
    errors: ['not_found'],
    params: z.object({ id: UsageId }),
    response: UsageRecord,
    handler: { rpc: 'models.getUsage', request: (i) => ({ id: i.params.id }), response: (r) => usageJson(r.record!) },
  }),
  route({
    ...common,
    id: 'models.providers.list',
    method: 'get',
    path: '/models/providers',
    summary:
      "Each model provider's status for the acting account: which key would serve its calls (own, platform, none), its last error and last use.",
    response: z.object({ providers: z.array(ProviderStatus) }).meta({ id: 'ModelProviderStatusList' }),
    handler: {
      rpc: 'models.listProviders',
      request: () => ({}),
      response: (r) => ({ providers: r.providers.map((p) => ({ ...p, servedBy: p.servedBy as 'own_key' | 'platform_key' | 'built_in' | 'none' })) }),
    },
  }),
  route({
    ...common,
    id: 'models.get',
    method: 'get',
    path: '/models/:id',
    summary: 'One model of the catalogue (deprecated ones too) with its availability for the caller; URL-encode the slash (`openai%2Fgpt-4o`).',
    errors: ['model_not_found'],
    params: z.object({ id: ModelId }),
    response: ModelRecord,
    handler: { rpc: 'models.getModel', request: (i) => ({ id: i.params.id }), response: (r) => modelJson(r.model!) },
  }),
];
