import { z } from 'zod';

/**
 * The model catalogue's closed sets and records, declared once: the route table validates queries
 * and documents answers with them, and the models service checks its catalogue file with the same
 * sets (services/models/src/catalogue.ts).
 */

/** What a model is for. `development` is the deterministic development model's alone. */
export const USE_CASES = ['chat', 'code', 'vision', 'embedding', 'reasoning', 'development'] as const;
export type UseCase = (typeof USE_CASES)[number];
export const UseCaseSchema = z.enum(USE_CASES);

/** What a model takes in and gives out. */
export const MODALITIES = ['text', 'image', 'audio', 'video', 'embedding'] as const;
export type Modality = (typeof MODALITIES)[number];
export const ModalitySchema = z.enum(MODALITIES);

/** Why a model cannot be run now (`unavailableReason.code`). */
export const UNAVAILABLE_CODES = ['not_configured', 'provider_key_missing'] as const;

/** A provider or family id as the catalogue spells them: lowercase letters, digits, `.` and `-`. */
export const CatalogueSlug = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[a-z0-9][a-z0-9.-]*$/, 'may hold lowercase letters, digits, . and - only');

export const ModelRecord = z
  .object({
    id: z.string().describe('`<provider>/<name>`, e.g. `svc/first`, `openai/gpt-4o`.'),
    name: z.string(),
    provider: z.string().describe('`svc` (the platform’s own models), `openai`, `anthropic`.'),
    family: z.string().describe('The id of its family (GET /models/families).'),
    description: z.string(),
    useCases: z.array(UseCaseSchema),
    contextWindow: z.number().int().describe('Tokens the model reads at most (input and output together).'),
    maxOutputTokens: z.number().int(),
    modalities: z.object({ input: z.array(ModalitySchema), output: z.array(ModalitySchema) }).meta({ id: 'ModelModalities' }),
    capabilities: z
      .object({ tools: z.boolean(), vision: z.boolean(), structuredOutput: z.boolean(), streaming: z.boolean() })
      .meta({ id: 'ModelCapabilities' }),
    pricing: z
      .object({ inputPerMillion: z.number(), outputPerMillion: z.number(), currency: z.literal('USD') })
      .meta({ id: 'ModelPricing', description: 'Published prices per million tokens.' }),
    deprecated: z.boolean(),
    replacedBy: z.string().optional().describe('The model to use instead of a deprecated one.'),
    available: z.boolean().describe('Whether the caller can run the model now.'),
    unavailableReason: z
      .object({ code: z.enum(UNAVAILABLE_CODES), message: z.string() })
      .optional()
      .meta({ id: 'ModelUnavailableReason', description: 'Why the model cannot be run now (present when `available` is false).' }),
  })
  .meta({ id: 'Model' });

export const ModelFamily = z
  .object({
    id: z.string(),
    name: z.string(),
    provider: z.string(),
    description: z.string(),
    members: z.array(z.string()).describe('The ids of its models, in catalogue order.'),
  })
  .meta({ id: 'ModelFamily' });

/** A provider a key may be set for: `openai`, `anthropic` (the catalogue's), `openai-compatible` (with a `baseUrl`). */
export const KeyProvider = CatalogueSlug.describe('`openai`, `anthropic`, or `openai-compatible` (which needs `baseUrl`).');

/** An account's key for a provider, as listed: the last four characters, never the key. */
export const ProviderKeyRecord = z
  .object({
    provider: z.string(),
    last4: z.string().describe('The last four characters of the key.'),
    baseUrl: z.string().nullable().describe('The base URL calls go to (openai-compatible, or a custom endpoint); null for the provider’s own.'),
    setBy: z.object({ kind: z.string(), id: z.string() }).meta({ id: 'ProviderKeySetBy', description: 'Who set the key.' }),
    createdAt: z.string().describe('ISO 8601 UTC with milliseconds'),
    updatedAt: z.string().describe('ISO 8601 UTC with milliseconds'),
  })
  .meta({ id: 'ProviderKey' });

export const SetProviderKeyBody = z
  .object({
    key: z
      .string()
      .min(1, 'must not be empty')
      .max(500, 'must be at most 500 characters')
      .regex(/^\S+$/, 'must not contain whitespace')
      .describe('The provider’s API key; stored encrypted, never shown again.'),
    baseUrl: z.string().max(2000, 'must be at most 2000 characters').optional().describe('An http(s) base URL; must reach a public address.'),
  })
  .strict()
  .meta({ id: 'SetProviderKeyRequest' });

/** An exact decimal amount, as a string (`10`, `-0.00018`). */
export const DecimalAmount = z.string().regex(/^-?\d+(\.\d+)?$/);

/** One entry of an account's credit ledger. */
export const CreditEntry = z
  .object({
    id: z.string(),
    kind: z.enum(['grant', 'charge']).describe('`grant`: credits the operator added; `charge`: a model call.'),
    amount: DecimalAmount.describe('Exact decimal string: above 0 for a grant, below 0 for a charge.'),
    currency: z.literal('USD'),
    model: z.string().optional().describe('A charge’s model.'),
    inputTokens: z.number().int().optional(),
    outputTokens: z.number().int().optional(),
    chargeKey: z.string().optional().describe('A charge’s idempotency key (`<runId>:<step>`): one charge per key.'),
    memo: z.string().optional().describe('A grant’s note.'),
    actor: z.object({ kind: z.string(), id: z.string() }).meta({ id: 'CreditActor', description: 'Who granted, or whose call was charged.' }),
    createdAt: z.string().describe('ISO 8601 UTC with milliseconds'),
  })
  .meta({ id: 'CreditEntry' });

export const CreditsView = z
  .object({
    balance: DecimalAmount.describe('Exact decimal string; may be a little below 0 after the call that used the last credits.'),
    currency: z.literal('USD'),
    entries: z.array(CreditEntry).describe('The ledger, newest first.'),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'Credits' });

export const GrantCreditsBody = z
  .object({
    accountId: z.string().regex(/^acct_[0-9a-z]{26}$/, 'must be an account id (acct_…)'),
    amount: z
      .string()
      .regex(/^\d{1,7}(\.\d{1,12})?$/, 'must be a decimal number as a string ("10", "2.5"), at most 12 decimal places')
      .describe('Credits to add, in USD, above 0.'),
    memo: z.string().trim().max(200, 'must be at most 200 characters').optional(),
  })
  .strict()
  .meta({ id: 'GrantCreditsRequest' });

export const GrantedCredits = z.object({ entry: CreditEntry, balance: DecimalAmount }).meta({ id: 'GrantedCredits' });
