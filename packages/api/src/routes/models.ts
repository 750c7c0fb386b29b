import { z } from 'zod';

import type { models } from '@svc/proto';

import { route } from '../route.js';
import { rpc } from '../rpc.js';
import { CatalogueSlug, ModelFamily, ModelRecord, type UNAVAILABLE_CODES, UseCaseSchema } from '../schemas/models.js';

/**
 * The model catalogue (docs/models.md): what models there are and whether the caller can run each
 * one. There is no completion endpoint; inference comes with its own issue.
 */

type UnavailableCode = (typeof UNAVAILABLE_CODES)[number];

/** A model record as the API shows it. */
export const modelJson = (m: models.Model) => ({
  id: m.id,
  name: m.name,
  provider: m.provider,
  family: m.family,
  description: m.description,
  useCases: m.useCases,
  contextWindow: m.contextWindow,
  maxOutputTokens: m.maxOutputTokens,
  modalities: { input: m.modalities?.input ?? [], output: m.modalities?.output ?? [] },
  capabilities: {
    tools: m.capabilities?.tools ?? false,
    vision: m.capabilities?.vision ?? false,
    structuredOutput: m.capabilities?.structuredOutput ?? false,
    streaming: m.capabilities?.streaming ?? false,
  },
  pricing: { inputPerMillion: m.pricing?.inputPerMillion ?? 0, outputPerMillion: m.pricing?.outputPerMillion ?? 0, currency: 'USD' as const },
  deprecated: m.deprecated,
  ...(m.replacedBy !== undefined ? { replacedBy: m.replacedBy } : {}),
  available: m.available,
  ...(m.unavailableReason ? { unavailableReason: { code: m.unavailableReason.code as UnavailableCode, message: m.unavailableReason.message } } : {}),
});

const familyJson = (f: models.Family) => ({ id: f.id, name: f.name, provider: f.provider, description: f.description, members: f.members });

const ModelList = z.object({ models: z.array(ModelRecord) });

export const modelsRoutes = [
  route({
    id: 'models.list',
    method: 'get',
    path: '/models',
    summary: 'The models the caller can use (not deprecated; the first-party model first), each with its availability.',
    tag: 'models',
    query: z.object({
      useCase: UseCaseSchema.optional().describe('Only models for this use case.'),
      provider: CatalogueSlug.optional().describe('Only models of this provider (`svc`, `openai`, `anthropic`).'),
      family: CatalogueSlug.optional().describe('Only models of this family (GET /models/families).'),
    }),
    response: ModelList.meta({ id: 'ModelList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: rpc('models', 'listModels', {
      request: (i) => ({ useCase: i.query.useCase, provider: i.query.provider, family: i.query.family }),
      response: (res) => ({ models: res.models.map(modelJson) }),
    }),
  }),
  route({
    id: 'models.catalog',
    method: 'get',
    path: '/models/catalog',
    summary: 'Every model of the catalogue, deprecated ones included, each with its availability.',
    tag: 'models',
    response: ModelList.meta({ id: 'ModelCatalog' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: rpc('models', 'getCatalog', {
      request: () => ({}),
      response: (res) => ({ models: res.models.map(modelJson) }),
    }),
  }),
  route({
    id: 'models.families',
    method: 'get',
    path: '/models/families',
    summary: 'The families of models, each with the ids of its members.',
    tag: 'models',
    response: z.object({ families: z.array(ModelFamily) }).meta({ id: 'ModelFamilyList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: rpc('models', 'listFamilies', {
      request: () => ({}),
      response: (res) => ({ families: res.families.map(familyJson) }),
    }),
  }),
];
