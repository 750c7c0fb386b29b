import fs from 'node:fs';
import path from 'node:path';

import { z } from 'zod';

import { CatalogueSlug, ModalitySchema, UseCaseSchema } from '@svc/contract';
import { describeIssue } from '@svc/kit';

/**
 * The model catalogue: a data file in the repository (services/models/data/catalogue.json),
 * checked when the service starts. A bad file stops the start with a message that names the file,
 * the entry and the field (`catalogue.json: models[3] (openai/gpt-4o): pricing.inputPerMillion: …`).
 */

export const CATALOGUE_FILE = path.join(__dirname, '../../data/catalogue.json');

/** The platform's own provider: the first-party model and the development model. */
export const FIRST_PARTY_PROVIDER = 'svc';

const Tokens = z.number().int('must be an integer').min(0, 'must be at least 0');
const Price = z.number().min(0, 'must be at least 0');
const Text = z.string().trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters');
const ModelId = z.string().regex(/^[a-z0-9][a-z0-9.-]*\/[a-z0-9][a-z0-9.-]*$/, 'must be <provider>/<name> in lowercase letters, digits, . and -');
/** A list of at least one item, none repeated. */
const distinct = <T extends z.ZodType>(item: T, what: string) =>
  z
    .array(item)
    .min(1, `must hold at least one ${what}`)
    .refine((xs) => new Set(xs).size === xs.length, `must not repeat ${what}`);

export const CatalogueModel = z
  .object({
    id: ModelId,
    name: Text,
    provider: CatalogueSlug,
    family: CatalogueSlug,
    description: z.string().trim().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters'),
    useCases: distinct(UseCaseSchema, 'use case'),
    contextWindow: Tokens.min(1, 'must be at least 1'),
    maxOutputTokens: Tokens,
    modalities: z.object({ input: distinct(ModalitySchema, 'modality'), output: distinct(ModalitySchema, 'modality') }).strict(),
    capabilities: z.object({ tools: z.boolean(), vision: z.boolean(), structuredOutput: z.boolean(), streaming: z.boolean() }).strict(),
    pricing: z.object({ inputPerMillion: Price, outputPerMillion: Price, currency: z.literal('USD') }).strict(),
    deprecated: z.boolean(),
    replacedBy: ModelId.optional(),
    /** The model's name at its provider when it is not the id after `<provider>/` (`claude-sonnet-4-0`). */
    upstream: z
      .string()
      .regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 printable ASCII characters without spaces')
      .optional(),
  })
  .strict();

export const CatalogueFamily = z
  .object({
    id: CatalogueSlug,
    name: Text,
    provider: CatalogueSlug,
    description: z.string().trim().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters'),
    members: distinct(ModelId, 'model id'),
  })
  .strict();

export const CatalogueFile = z.object({ families: z.array(CatalogueFamily), models: z.array(CatalogueModel).min(1) }).strict();

export type CatalogueModel = z.infer<typeof CatalogueModel>;
export type CatalogueFamily = z.infer<typeof CatalogueFamily>;

/** A checked catalogue: its records in file order, and the two models of the platform's own. */
export interface Catalogue {
  models: CatalogueModel[];
  families: CatalogueFamily[];
  /** The model served by the operator's own upstream (SVC_MODELS_FIRST_PARTY_URL). */
  firstParty: CatalogueModel;
  /** The deterministic development model (use case `development`). */
  development: CatalogueModel;
}

export class CatalogueError extends Error {
  override name = 'CatalogueError';
}

const isDevelopment = (m: CatalogueModel) => m.useCases.includes('development');

/** A problem of one entry, in the form the start error shows. */
interface Problem {
  at: (string | number)[];
  message: string;
}

/** The rules between entries, after each entry's own shape is checked. */
function consistency(file: z.infer<typeof CatalogueFile>): Problem[] {
  const problems: Problem[] = [];
  const models = new Map<string, CatalogueModel>();
  const families = new Map<string, CatalogueFamily>();
  file.families.forEach((f, i) => {
    if (families.has(f.id)) problems.push({ at: ['families', i, 'id'], message: `repeats the family id "${f.id}"` });
    families.set(f.id, f);
  });
  file.models.forEach((m, i) => {
    const at = (field: string) => ['models', i, field];
    if (models.has(m.id)) problems.push({ at: at('id'), message: `repeats the model id "${m.id}"` });
    models.set(m.id, m);
    if (!m.id.startsWith(`${m.provider}/`)) problems.push({ at: at('id'), message: `must start with its provider, "${m.provider}/"` });
    const family = families.get(m.family);
    if (!family) problems.push({ at: at('family'), message: `names the family "${m.family}", which the catalogue does not have` });
    else if (family.provider !== m.provider)
      problems.push({ at: at('family'), message: `names a family of another provider ("${family.provider}")` });
    else if (!family.members.includes(m.id)) problems.push({ at: at('family'), message: `names the family "${m.family}", which does not list it` });
    if (m.maxOutputTokens > m.contextWindow) problems.push({ at: at('maxOutputTokens'), message: 'must not exceed contextWindow' });
    if (m.capabilities.vision !== m.modalities.input.includes('image')) {
      problems.push({ at: ['models', i, 'capabilities', 'vision'], message: 'must be true exactly when modalities.input holds "image"' });
    }
    if (m.replacedBy !== undefined && !m.deprecated) problems.push({ at: at('replacedBy'), message: 'is for a deprecated model only' });
    if (isDevelopment(m)) {
      if (m.useCases.length !== 1) problems.push({ at: at('useCases'), message: 'of the development model must be ["development"] only' });
      if (m.provider !== FIRST_PARTY_PROVIDER)
        problems.push({ at: at('provider'), message: `of the development model must be "${FIRST_PARTY_PROVIDER}"` });
      if (m.pricing.inputPerMillion !== 0 || m.pricing.outputPerMillion !== 0)
        problems.push({ at: at('pricing'), message: 'of the development model must be 0' });
      if (m.deprecated) problems.push({ at: at('deprecated'), message: 'must be false for the development model' });
    }
  });
  file.models.forEach((m, i) => {
    if (m.replacedBy === undefined) return;
    const next = models.get(m.replacedBy);
    if (!next) problems.push({ at: ['models', i, 'replacedBy'], message: `names "${m.replacedBy}", which the catalogue does not have` });
    else if (next.deprecated || next.id === m.id)
      problems.push({ at: ['models', i, 'replacedBy'], message: `must name a model that is not deprecated` });
  });
  file.families.forEach((f, i) => {
    f.members.forEach((id, j) => {
      const m = models.get(id);
      if (!m) problems.push({ at: ['families', i, 'members', j], message: `names the model "${id}", which the catalogue does not have` });
      else if (m.family !== f.id) problems.push({ at: ['families', i, 'members', j], message: `names "${id}", whose family is "${m.family}"` });
    });
  });
  const firstParty = file.models.filter((m) => m.provider === FIRST_PARTY_PROVIDER && !isDevelopment(m));
  const development = file.models.filter(isDevelopment);
  if (firstParty.length !== 1) {
    problems.push({
      at: ['models'],
      message: `must hold exactly one first-party model (provider "${FIRST_PARTY_PROVIDER}", not for development); found ${firstParty.length}`,
    });
  } else if (file.models[0] !== firstParty[0]) {
    problems.push({ at: ['models', 0], message: `must be the first-party model (${firstParty[0]!.id}): it is listed first` });
  } else if (firstParty[0]!.deprecated) {
    problems.push({ at: ['models', 0, 'deprecated'], message: 'must be false for the first-party model' });
  }
  if (development.length !== 1)
    problems.push({ at: ['models'], message: `must hold exactly one development model (use case "development"); found ${development.length}` });
  return problems;
}

/** `models[3] (openai/gpt-4o): pricing.inputPerMillion`: the entry (with its id when it has one) and the field. */
function where(raw: unknown, at: PropertyKey[]): string {
  if (at.length === 0) return '(the file)';
  const [list, index, ...field] = at;
  let entry = String(list);
  if (typeof index === 'number') {
    const id = (raw as Record<string, Array<{ id?: unknown }>>)?.[String(list)]?.[index]?.id;
    entry = `${String(list)}[${index}]${typeof id === 'string' ? ` (${id})` : ''}`;
  } else if (index !== undefined) field.unshift(index);
  return field.length ? `${entry}: ${field.map(String).join('.')}` : entry;
}

/** Checks a catalogue's content; throws a CatalogueError naming every problem. */
export function parseCatalogue(raw: unknown, source = 'catalogue.json'): Catalogue {
  const fail = (problems: Problem[]): never => {
    const lines = problems.map((p) => `${source}: ${where(raw, p.at)}: ${p.message}`);
    throw new CatalogueError(`invalid model catalogue:\n  ${lines.join('\n  ')}`);
  };
  const parsed = CatalogueFile.safeParse(raw);
  if (!parsed.success) {
    return fail(parsed.error.issues.map((issue) => ({ at: issue.path as (string | number)[], message: describeIssue(issue).replace(/\.$/, '') })));
  }
  const problems = consistency(parsed.data);
  if (problems.length) return fail(problems);
  const { models, families } = parsed.data;
  return { models, families, firstParty: models[0]!, development: models.find(isDevelopment)! };
}

/** Reads and checks the catalogue file (once, when the service starts). */
export function loadCatalogue(file = CATALOGUE_FILE): Catalogue {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogueError(`the model catalogue ${file} cannot be read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CatalogueError(`the model catalogue ${file} is not JSON: ${(err as Error).message}`);
  }
  return parseCatalogue(raw, path.basename(file));
}
