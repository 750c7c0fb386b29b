import { randomUUID } from 'node:crypto';

import { type Actor, actorOf, checkOutboundUrl, DomainError, invalid, pinnedFetch, type Principal } from '@svc/kit';
import type { models_infer } from '@svc/proto';

import type { Catalogue, CatalogueModel } from '../models/catalogue.js';
import { OPENAI_COMPATIBLE, type ProviderKeys } from '../models/provider-keys.js';
import type { ModelsSettings } from '../settings.js';
import { anthropicAdapter } from './anthropic.js';
import { costOf } from './cost.js';
import { openaiAdapter } from './openai.js';
import type { Adapter, ChatMessage, Conversation, Upstream } from './types.js';

/**
 * Inference (docs/models.md, "Inference"): resolves the model to an upstream and a key, checks the
 * account can pay, streams the adapter's answer as InferEvents and ends with the usage record,
 * after charging its cost once per charge_key.
 *
 * Which key pays: the acting account's own provider key when it has one (`own_key`, no credits);
 * else the platform's key for that provider (SVC_MODELS_OPENAI_KEY, ...), paid with credits; the
 * development model and the first-party model go to their own servers.
 */

export interface InferDeps {
  catalogue: Catalogue;
  settings: ModelsSettings;
  keys: ProviderKeys;
  /** The development model's server (dev-model.ts), started with the service. */
  dev: () => { url: string; apiKey: string };
  /** The credit ledger; absent, nothing is charged. */
  credits?: Charging;
  /** Where usage records and providers' failures go (usage.ts); absent, nowhere. */
  usage?: UsageRecorder;
  /** Adapters by wire; default the SDK adapters. */
  adapters?: Partial<Record<Wire, Adapter>>;
  /** How names resolve for a custom baseUrl (tests); default the system resolver. */
  lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
}

/** What inference needs of the credit ledger (credits.ts). */
export interface Charging {
  /** Throws insufficient_credits unless the account may start a priced call under chargeKey. */
  ensure(accountId: string, chargeKey: string): Promise<void>;
  /** Debits cost once per (account, chargeKey); a second debit under the same key does nothing. */
  debit(
    accountId: string,
    chargeKey: string,
    cost: string,
    memo: { model: string; inputTokens: number; outputTokens: number; actor: Actor },
  ): Promise<void>;
}

/** What inference tells the usage records (usage.ts). */
export interface UsageRecorder {
  record(
    p: Principal,
    u: {
      model: string;
      provider: string;
      inputTokens: number;
      outputTokens: number;
      cost: string;
      currency: string;
      ownKey: boolean;
      charged: boolean;
      chargeKey: string;
      finishReason: string;
    },
  ): Promise<void>;
  failed(p: Principal, provider: string, err: unknown): Promise<void>;
}

export type Wire = 'openai' | 'anthropic';

interface Route {
  wire: Wire;
  upstream: Upstream;
  /** The model's name at the upstream. */
  name: string;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const MESSAGES_MAX = 10_000;

/** The model's name at its provider: the catalogue's `upstream`, else the id after the provider. */
const upstreamName = (m: CatalogueModel) => m.upstream ?? m.id.slice(m.provider.length + 1);

export class Inference {
  private readonly adapters: Record<Wire, Adapter | undefined>;

  constructor(private readonly deps: InferDeps) {
    this.adapters = { openai: openaiAdapter, anthropic: anthropicAdapter, ...deps.adapters };
  }

  /** Streams one call: deltas, tool calls, then the usage record (after the charge). */
  async *infer(p: Principal, req: models_infer.InferRequest, signal: AbortSignal): AsyncGenerator<models_infer.InferEvent> {
    const conversation = checkRequest(req);
    const { model, route } = await this.route(p, req.model);
    const priced = !route.upstream.ownKey && (model.pricing.inputPerMillion > 0 || model.pricing.outputPerMillion > 0);
    // No key: a call of its own, charged on its own.
    const chargeKey = req.chargeKey || `once:${randomUUID()}`;
    if (priced && this.deps.credits) await this.deps.credits.ensure(p.accountId, chargeKey);
    const adapter = this.adapters[route.wire];
    if (!adapter) throw new DomainError('unavailable', 'provider_unavailable', `No adapter serves ${route.wire} here.`);
    const conv: Conversation = { ...conversation, model: route.name };
    try {
      yield* this.stream(p, adapter, route, conv, signal, model, priced, chargeKey);
    } catch (err) {
      await this.deps.usage?.failed(p, model.provider, err);
      throw err;
    }
  }

  private async *stream(
    p: Principal,
    adapter: Adapter,
    route: Route,
    conv: Conversation,
    signal: AbortSignal,
    model: CatalogueModel,
    priced: boolean,
    chargeKey: string,
  ): AsyncGenerator<models_infer.InferEvent> {
    for await (const e of adapter(route.upstream, conv, signal)) {
      if ('delta' in e) yield { delta: e.delta };
      else if ('toolCall' in e) yield { toolCall: e.toolCall };
      else {
        const cost = costOf(model.pricing, e.end.inputTokens, e.end.outputTokens);
        if (priced && this.deps.credits && cost !== '0') {
          await this.deps.credits.debit(p.accountId, chargeKey, cost, {
            model: model.id,
            inputTokens: e.end.inputTokens,
            outputTokens: e.end.outputTokens,
            actor: actorOf(p),
          });
        }
        await this.deps.usage?.record(p, {
          model: model.id,
          provider: model.provider,
          inputTokens: e.end.inputTokens,
          outputTokens: e.end.outputTokens,
          cost,
          currency: model.pricing.currency,
          ownKey: route.upstream.ownKey,
          charged: Boolean(priced && this.deps.credits && cost !== '0'),
          chargeKey,
          finishReason: e.end.finishReason,
        });
        yield {
          usage: {
            model: model.id,
            inputTokens: e.end.inputTokens,
            outputTokens: e.end.outputTokens,
            cost,
            currency: model.pricing.currency,
            ownKey: route.upstream.ownKey,
            finishReason: e.end.finishReason,
          },
        };
      }
    }
  }

  /** The model and where its call goes, for this caller; model_not_found or model_unavailable otherwise. */
  private async route(p: Principal, id: string): Promise<{ model: CatalogueModel; route: Route }> {
    const { catalogue, settings } = this.deps;
    if (id.startsWith(`${OPENAI_COMPATIBLE}/`)) return this.compatible(p, id);
    const model = catalogue.models.find((m) => m.id === id);
    if (!model) throw new DomainError('not_found', 'model_not_found', `There is no model ${JSON.stringify(id)} (GET /models lists them).`);
    if (model === catalogue.development) {
      const dev = this.deps.dev();
      return { model, route: { wire: 'openai', name: model.id, upstream: { provider: 'svc', baseUrl: dev.url, apiKey: dev.apiKey, ownKey: false } } };
    }
    if (model === catalogue.firstParty) {
      const fp = settings.firstParty;
      if (!fp.url) {
        throw new DomainError(
          'unprocessable',
          'model_unavailable',
          'The first-party model is not configured: the operator sets SVC_MODELS_FIRST_PARTY_URL on the models service.',
        );
      }
      return {
        model,
        route: {
          wire: 'openai',
          name: fp.model ?? model.id,
          upstream: { provider: 'svc', baseUrl: fp.url, apiKey: fp.key ?? 'none', ownKey: false },
        },
      };
    }
    const wire: Wire = model.provider === 'anthropic' ? 'anthropic' : 'openai';
    const row = await this.deps.keys.store.get(p.accountId, model.provider);
    if (row) {
      const upstream: Upstream = { provider: model.provider, apiKey: this.deps.keys.open(row), ownKey: true, maxCompletionTokens: wire === 'openai' };
      if (row.base_url) {
        // Checked again now: what the name resolves to may have changed since the key was set.
        const checked = await checkOutboundUrl(row.base_url, { allow: settings.allowedHosts, lookup: this.deps.lookup });
        upstream.baseUrl = row.base_url;
        upstream.fetch = pinnedFetch(checked);
      }
      return { model, route: { wire, name: upstreamName(model), upstream } };
    }
    const platform = settings.providers[model.provider];
    if (platform?.key) {
      return {
        model,
        route: {
          wire,
          name: upstreamName(model),
          upstream: { provider: model.provider, apiKey: platform.key, baseUrl: platform.url, ownKey: false, maxCompletionTokens: wire === 'openai' },
        },
      };
    }
    throw new DomainError('unprocessable', 'model_unavailable', `Set a provider key for ${model.provider} to run ${model.id}.`, {
      reason: 'provider_key_missing',
    });
  }

  /**
   * `openai-compatible/<name>`: the model `<name>` on the server of the account's openai-compatible
   * key. Not in the catalogue, so unpriced: the account's key pays, no credits.
   */
  private async compatible(p: Principal, id: string): Promise<{ model: CatalogueModel; route: Route }> {
    const name = id.slice(OPENAI_COMPATIBLE.length + 1);
    if (!/^[\x21-\x7e]{1,200}$/.test(name)) throw invalid('model: the name after openai-compatible/ must be 1 to 200 printable characters.');
    const row = await this.deps.keys.store.get(p.accountId, OPENAI_COMPATIBLE);
    if (!row?.base_url) {
      throw new DomainError('unprocessable', 'model_unavailable', `Set a provider key for ${OPENAI_COMPATIBLE} (with its baseUrl) to run ${id}.`, {
        reason: 'provider_key_missing',
      });
    }
    const checked = await checkOutboundUrl(row.base_url, { allow: this.deps.settings.allowedHosts, lookup: this.deps.lookup });
    const model = {
      ...this.deps.catalogue.development,
      id,
      name,
      provider: OPENAI_COMPATIBLE,
      family: OPENAI_COMPATIBLE,
      useCases: ['chat'],
      pricing: { inputPerMillion: 0, outputPerMillion: 0, currency: 'USD' },
    } as CatalogueModel;
    const upstream: Upstream = {
      provider: OPENAI_COMPATIBLE,
      apiKey: this.deps.keys.open(row),
      ownKey: true,
      baseUrl: row.base_url,
      fetch: pinnedFetch(checked),
    };
    return { model, route: { wire: 'openai', name, upstream } };
  }
}

/** The request's conversation, checked: roles, tool calls, tool schemas. */
function checkRequest(req: models_infer.InferRequest): Omit<Conversation, 'model'> {
  if (!req.messages.length) throw invalid('messages: must hold at least one message.');
  if (req.messages.length > MESSAGES_MAX) throw invalid(`messages: must hold at most ${MESSAGES_MAX} messages.`);
  req.messages.forEach((m: ChatMessage, i) => {
    if (!ROLES.has(m.role)) throw invalid(`messages[${i}].role: must be system, user, assistant or tool.`);
    if (m.role === 'tool' && !m.toolCallId) throw invalid(`messages[${i}].toolCallId: is required for a tool message.`);
    m.toolCalls.forEach((c, j) => {
      if (m.role !== 'assistant') throw invalid(`messages[${i}].toolCalls: only an assistant message makes tool calls.`);
      if (!c.id || !c.name) throw invalid(`messages[${i}].toolCalls[${j}]: needs an id and a name.`);
      if (!isJsonObject(c.argumentsJson || '{}')) throw invalid(`messages[${i}].toolCalls[${j}].argumentsJson: must be a JSON object.`);
    });
  });
  const names = new Set<string>();
  req.tools.forEach((t, i) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(t.name)) throw invalid(`tools[${i}].name: must be 1 to 64 letters, digits, _ or -.`);
    if (names.has(t.name)) throw invalid(`tools[${i}].name: repeats "${t.name}".`);
    names.add(t.name);
    if (!isJsonObject(t.inputSchemaJson || '{"type":"object"}')) throw invalid(`tools[${i}].inputSchemaJson: must be a JSON Schema object.`);
  });
  if (req.temperature !== undefined && !(req.temperature >= 0 && req.temperature <= 2)) throw invalid('temperature: must be from 0 to 2.');
  if (req.maxOutputTokens !== undefined && req.maxOutputTokens < 1) throw invalid('maxOutputTokens: must be at least 1.');
  if (req.chargeKey.length > 200) throw invalid('chargeKey: must be at most 200 characters.');
  return { messages: req.messages, tools: req.tools, temperature: req.temperature, maxOutputTokens: req.maxOutputTokens };
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
