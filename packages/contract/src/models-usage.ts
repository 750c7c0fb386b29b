import { z } from 'zod';

import { ModelRecord, UseCaseSchema } from './models.js';

/** Schemas of choosing a model, usage records, providers' status and the credit views (docs/models.md). */

export const ModelId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9.-]*$/, 'must be a model id such as "openai/gpt-4o"')
  .describe('A model id, `<provider>/<name>` (GET /models/catalog lists them).');

/** A number of tokens in a JSON body: a JSON number (not coerced: `null` or `"12"` is refused). */
export const TokenCount = z.number().int().min(0).max(100_000_000);
/** A number of tokens in a query string (text, read as a number). */
export const TokenCountQuery = z.coerce.number().int().min(0).max(100_000_000);

export const CostEstimate = z
  .object({
    model: z.string(),
    inputCost: z.string().describe('Cost of the input tokens of one call.'),
    outputCost: z.string().describe('Cost of the output tokens of one call.'),
    costPerCall: z.string(),
    total: z.string().describe('`calls` times the cost per call.'),
    currency: z.string(),
    calls: z.number().int(),
    paidWithCredits: z.boolean().describe("Whether the caller's calls would be paid with credits (the platform's key, a priced model)."),
    fits: z.boolean().describe("Whether the tokens fit the model's context window and output limit."),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'ModelCostEstimate' });

export const TokenCountResult = z
  .object({
    tokens: z.number().int().describe('Estimated tokens.'),
    characters: z.number().int(),
    method: z.string().describe('How tokens were counted: an estimate of one token per 4 characters, not a tokenizer.'),
    model: z.string().optional(),
    contextWindow: z.number().int().optional(),
    remaining: z.number().int().optional().describe('Context window minus the tokens (negative when it does not fit).'),
    fits: z.boolean().optional(),
  })
  .meta({ id: 'ModelTokenCount' });

export const ComparedModel = z
  .object({ model: ModelRecord, costPerCall: z.string(), costRank: z.number().int().describe('1 for the cheapest call.') })
  .meta({ id: 'ComparedModel' });

export const Recommendation = z
  .object({
    model: ModelRecord,
    costPerCall: z.string().describe('Cost of the expected call.'),
    score: z.number().int().describe('Higher is better.'),
    reasons: z.array(z.string()),
  })
  .meta({ id: 'ModelRecommendation' });

export const RecommendBody = z
  .object({
    useCase: UseCaseSchema.describe('What the model is for.'),
    tools: z.boolean().default(false).describe('Needs tool calls.'),
    vision: z.boolean().default(false).describe('Needs image input.'),
    structuredOutput: z.boolean().default(false).describe('Needs structured (JSON schema) output.'),
    minContext: TokenCount.default(0).describe('Smallest context window, in tokens.'),
    inputTokens: TokenCount.default(1000).describe('Expected input tokens of a call.'),
    outputTokens: TokenCount.default(500).describe('Expected output tokens of a call.'),
    maxCostPerCall: z
      .string()
      .regex(/^\d{1,7}(\.\d{1,12})?$/)
      .optional()
      .describe('Budget per call in USD, a decimal string ("0.01").'),
    availableOnly: z.boolean().default(false).describe('Only models the account can run now.'),
    limit: z.number().int().min(1).max(20).default(5).describe('How many models to recommend at most (1–20; default 5).'),
  })
  .meta({ id: 'RecommendModels' });

export const UsageRecord = z
  .object({
    id: z.string(),
    model: z.string(),
    provider: z.string(),
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    cost: z.string().describe("The call at the catalogue's prices."),
    currency: z.string(),
    ownKey: z.boolean().describe("The account's own provider key served it (no credits)."),
    charged: z.boolean().describe('Credits paid for it.'),
    chargeKey: z.string(),
    finishReason: z.string().describe('`stop`, `tool_calls` or `length`.'),
    actor: z.object({ kind: z.string(), id: z.string() }).describe('Whose call (the agent of a run).'),
    createdAt: z.string(),
  })
  .meta({ id: 'ModelUsageRecord' });

export const UsageGroup = z
  .object({
    key: z.string().describe('The model, provider, UTC day or `<kind>:<id>` of the caller; `total` for the totals.'),
    calls: z.number().int(),
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    cost: z.string(),
    charged: z.string().describe('The part paid with credits.'),
  })
  .meta({ id: 'ModelUsageGroup' });

export const ProviderStatus = z
  .object({
    provider: z.string(),
    models: z.number().int().describe('Models of the provider in the catalogue (not deprecated).'),
    platformKey: z.boolean().describe('The platform has a key for it (calls paid with credits).'),
    ownKey: z.boolean().describe('The account has its own key for it.'),
    servedBy: z.enum(['own_key', 'platform_key', 'built_in', 'none']).describe("Which key would serve the account's calls."),
    available: z.boolean(),
    lastError: z
      .object({ code: z.string(), message: z.string(), at: z.string() })
      .optional()
      .describe("The provider's last failure on the account's calls."),
    lastUsedAt: z.string().optional(),
  })
  .meta({ id: 'ModelProviderStatus' });
