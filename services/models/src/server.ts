import type { Handlers } from '@svc/kit';
import type { models } from '@svc/proto';

import { type Credits, decimal } from './credits/credits.js';
import type { CreditEntryRow } from './credits/store.js';
import type { Inference } from './inference/infer.js';
import type { CatalogueFamily } from './models/catalogue.js';
import type { ModelsDomain, ModelView } from './models/models.js';
import type { ProviderKeys } from './models/provider-keys.js';
import type { ProviderKeyRow } from './models/store.js';
import type { ViewHandlers } from './usage/server.js';

type Def = typeof models.ModelsServiceService;

export function toModel(m: ModelView): models.Model {
  return {
    id: m.id,
    name: m.name,
    provider: m.provider,
    family: m.family,
    description: m.description,
    useCases: m.useCases,
    contextWindow: m.contextWindow,
    maxOutputTokens: m.maxOutputTokens,
    modalities: m.modalities,
    capabilities: m.capabilities,
    pricing: m.pricing,
    deprecated: m.deprecated,
    replacedBy: m.replacedBy,
    available: m.available,
    unavailableReason: m.unavailableReason,
  };
}

const toFamily = (f: CatalogueFamily): models.Family => ({ ...f });

/** A provider key as the service answers it: never the sealed or plain key. */
export const toProviderKey = (k: ProviderKeyRow): models.ProviderKey => ({
  provider: k.provider,
  last4: k.last4,
  baseUrl: k.base_url ?? undefined,
  setBy: { kind: k.set_by.kind, id: k.set_by.id },
  createdAt: k.created_at.toISOString(),
  updatedAt: k.updated_at.toISOString(),
});

/** A ledger entry as the service answers it. */
export const toCreditEntry = (e: CreditEntryRow): models.CreditEntry => ({
  id: e.id,
  kind: e.kind,
  amount: decimal(e.amount),
  currency: e.currency,
  model: e.model ?? undefined,
  inputTokens: Number(e.input_tokens),
  outputTokens: Number(e.output_tokens),
  chargeKey: e.charge_key ?? undefined,
  memo: e.memo ?? undefined,
  actor: { kind: e.actor.kind, id: e.actor.id },
  createdAt: e.created_at.toISOString(),
});

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(domain: ModelsDomain, keys: ProviderKeys, inference: Inference, credits: Credits): Omit<Handlers<Def>, keyof ViewHandlers> {
  return {
    async listModels(req, { principal }) {
      return { models: (await domain.list(principal, req)).map(toModel) };
    },
    async getCatalog(_req, { principal }) {
      return { models: (await domain.catalog(principal)).map(toModel) };
    },
    async listFamilies() {
      return { families: domain.families().map(toFamily) };
    },
    async setProviderKey(req, { principal }) {
      return { providerKey: toProviderKey(await keys.set(principal, req)) };
    },
    async listProviderKeys(_req, { principal }) {
      return { providerKeys: (await keys.list(principal)).map(toProviderKey) };
    },
    async deleteProviderKey(req, { principal }) {
      await keys.remove(principal, req.provider);
      return {};
    },
    infer(req, { principal, signal }) {
      return inference.infer(principal, req, signal);
    },
    async getCredits(req, { principal }) {
      const v = await credits.view(principal, { limit: req.limit, cursor: req.cursor });
      return { balance: v.balance, currency: v.currency, entries: v.entries.map(toCreditEntry), nextCursor: v.nextCursor };
    },
    async grantCredits(req, { principal, principalToken }) {
      const { entry, balance } = await credits.grant(principal, principalToken, { accountId: req.accountId, amount: req.amount, memo: req.memo });
      return { entry: toCreditEntry(entry), balance };
    },
  };
}
