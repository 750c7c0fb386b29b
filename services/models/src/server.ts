import type { Handlers } from '@svc/kit';
import type { models } from '@svc/proto';

import type { CatalogueFamily } from './catalogue.js';
import type { ModelsDomain, ModelView } from './models.js';

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

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(domain: ModelsDomain): Handlers<Def> {
  return {
    async listModels(req, { principal }) {
      return { models: domain.list(principal, req).map(toModel) };
    },
    async getCatalog(_req, { principal }) {
      return { models: domain.catalog(principal).map(toModel) };
    },
    async listFamilies() {
      return { families: domain.families().map(toFamily) };
    },
  };
}
