import { z } from 'zod';

import type { models } from '@svc/proto';

import { route, Success } from '../../route.js';
import {
  CatalogueSlug,
  KeyProvider,
  ModelFamily,
  ModelRecord,
  ProviderKeyRecord,
  SetProviderKeyBody,
  type UNAVAILABLE_CODES,
  UseCaseSchema,
} from '../../schemas/models.js';

/**
 * The model catalogue (docs/models.md): what models there are and whether the caller can run each
 * one, and the accounts' provider keys. There is no completion endpoint: inference is the models
 * service's internal Infer call, for the runtime.
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

/** A provider key as the API shows it: never the key. */
export const providerKeyJson = (k: models.ProviderKey) => ({
  provider: k.provider,
  last4: k.last4,
  baseUrl: k.baseUrl ?? null,
  setBy: { kind: k.setBy?.kind ?? '', id: k.setBy?.id ?? '' },
  createdAt: k.createdAt,
  updatedAt: k.updatedAt,
});

const providerParams = z.object({ provider: KeyProvider });

const ModelList = z.object({ models: z.array(ModelRecord) });

/**
 * The listings depend on the catalogue (fixed while the service runs), its settings and the acting
 * account's provider keys: kept per account by the dispatcher (docs/models.md, "Performance"),
 * dropped when the account's keys change (here, or on another replica through the service's
 * `models.provider_key.*` events), at most 10 s old otherwise.
 */
export const MODELS_CACHE = { tag: 'models', ttlMs: 10_000 };

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
    handler: {
      rpc: 'models.listModels',
      request: (i) => ({ useCase: i.query.useCase, provider: i.query.provider, family: i.query.family }),
      response: (res) => ({ models: res.models.map(modelJson) }),
      cache: MODELS_CACHE,
    },
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
    handler: {
      rpc: 'models.getCatalog',
      request: () => ({}),
      response: (res) => ({ models: res.models.map(modelJson) }),
      cache: MODELS_CACHE,
    },
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
    handler: {
      rpc: 'models.listFamilies',
      request: () => ({}),
      response: (res) => ({ families: res.families.map(familyJson) }),
    },
  }),
  route({
    id: 'providerKeys.list',
    method: 'get',
    path: '/models/provider-keys',
    summary: "The acting account's provider keys (the last four characters, never the key).",
    tag: 'models',
    response: z.object({ providerKeys: z.array(ProviderKeyRecord) }).meta({ id: 'ProviderKeyList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'models.listProviderKeys',
      request: () => ({}),
      response: (res) => ({ providerKeys: res.providerKeys.map(providerKeyJson) }),
    },
  }),
  route({
    id: 'providerKeys.set',
    method: 'put',
    effect: 'overwrites',
    path: '/models/provider-keys/:provider',
    summary: "Set (or replace) the acting account's key for a provider; an organization's key serves everyone acting in it.",
    errors: ['address_not_allowed', 'unknown_provider'],
    tag: 'models',
    params: providerParams,
    body: SetProviderKeyBody,
    response: ProviderKeyRecord,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'models.setProviderKey',
      request: (i) => ({ provider: i.params.provider, key: i.body.key, baseUrl: i.body.baseUrl }),
      response: (res) => providerKeyJson(res.providerKey!),
      invalidates: [MODELS_CACHE.tag],
    },
  }),
  route({
    id: 'providerKeys.delete',
    method: 'delete',
    path: '/models/provider-keys/:provider',
    summary: "Delete the acting account's key for a provider.",
    errors: ['insufficient_role', 'provider_key_not_found'],
    tag: 'models',
    params: providerParams,
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'models.deleteProviderKey',
      request: (i) => ({ provider: i.params.provider }),
      response: () => ({ success: true as const }),
      invalidates: [MODELS_CACHE.tag],
    },
  }),
];
