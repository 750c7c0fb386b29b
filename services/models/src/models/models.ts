import { USE_CASES, type UseCase } from '@svc/contract';
import { DomainError, type Principal } from '@svc/kit';

import type { ModelsSettings } from '../settings.js';
import type { Catalogue, CatalogueFamily, CatalogueModel } from './catalogue.js';

/** Why a model cannot be run now: a stable code and a sentence for the caller. */
export interface Unavailable {
  code: 'not_configured' | 'provider_key_missing';
  message: string;
}

/** A catalogue record with its availability for one caller. */
export type ModelView = CatalogueModel & { available: boolean; unavailableReason?: Unavailable };

export interface ModelFilter {
  useCase?: string;
  provider?: string;
  family?: string;
}

/**
 * The rules of the catalogue: which models a caller sees and whether it can run each one. The
 * catalogue is loaded and checked once, when the service starts.
 */
export class ModelsDomain {
  constructor(
    private readonly catalogue: Catalogue,
    private readonly settings: ModelsSettings,
    /** The providers the principal's acting account has a key for (provider-keys.ts). */
    private readonly keyedProviders: (principal: Principal) => Promise<Set<string>> = async () => new Set(),
  ) {}

  /**
   * Whether a caller whose acting account has keys for `keyed` can run `model` now. The development
   * model always; the first-party model when the operator named its upstream; a provider's model
   * with the acting account's key for that provider, or the platform's (paid with credits).
   */
  availability(model: CatalogueModel, keyed: Set<string>): { available: boolean; unavailableReason?: Unavailable } {
    if (model === this.catalogue.development) return { available: true };
    if (model === this.catalogue.firstParty) {
      if (this.settings.firstParty.url) return { available: true };
      return {
        available: false,
        unavailableReason: {
          code: 'not_configured',
          message: 'The first-party model is not configured: the operator sets SVC_MODELS_FIRST_PARTY_URL on the models service.',
        },
      };
    }
    if (keyed.has(model.provider) || this.settings.providers[model.provider]?.key) return { available: true };
    return {
      available: false,
      unavailableReason: { code: 'provider_key_missing', message: `Set a provider key for ${model.provider} to run this model.` },
    };
  }

  /** The models the caller can use: not deprecated, in catalogue order (the first-party model first), filtered. */
  async list(principal: Principal, filter: ModelFilter): Promise<ModelView[]> {
    if (filter.useCase !== undefined && !(USE_CASES as readonly string[]).includes(filter.useCase)) {
      throw new DomainError('invalid_argument', 'invalid_request', `useCase must be one of ${USE_CASES.map((u) => `"${u}"`).join(', ')}.`);
    }
    const keyed = await this.keyedProviders(principal);
    return this.catalogue.models
      .filter(
        (m) =>
          !m.deprecated &&
          (filter.useCase === undefined || m.useCases.includes(filter.useCase as UseCase)) &&
          (filter.provider === undefined || m.provider === filter.provider) &&
          (filter.family === undefined || m.family === filter.family),
      )
      .map((m) => this.view(m, keyed));
  }

  /** Every record, deprecated ones included. */
  async catalog(principal: Principal): Promise<ModelView[]> {
    const keyed = await this.keyedProviders(principal);
    return this.catalogue.models.map((m) => this.view(m, keyed));
  }

  families(): CatalogueFamily[] {
    return this.catalogue.families;
  }

  private view(model: CatalogueModel, keyed: Set<string>): ModelView {
    return { ...model, ...this.availability(model, keyed) };
  }
}
