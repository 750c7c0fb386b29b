import { accountsClient } from '@svc/clients';
import { defineService, Envelope, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { models } from '@svc/proto';

import { CreditAlerts } from './credits/alerts.js';
import { CreditAlertStore } from './credits/alerts-store.js';
import { Credits } from './credits/credits.js';
import { CreditViews } from './credits/views.js';
import { startDevModelServer } from './inference/dev-model.js';
import { Inference } from './inference/infer.js';
import { migrations } from './migrations/index.js';
import { loadCatalogue } from './models/catalogue.js';
import { ModelsDomain } from './models/models.js';
import { keyProviders, providerKeyKeks, ProviderKeys } from './models/provider-keys.js';
import { SCHEMA } from './models/store.js';
import { handlers, toCreditEntry, toModel } from './server.js';
import { modelsSettings, modelsSettingsSchema } from './settings.js';
import { Advisor } from './usage/advisor.js';
import { viewHandlers } from './usage/server.js';
import { UsageStore } from './usage/store.js';
import { Usage } from './usage/usage.js';

export { Credits, CURRENCY, decimal } from './credits/credits.js';
export { costOf, fromUnits, toUnits } from './inference/cost.js';
export { devAnswer, type DevModelServer, devTokens, startDevModelServer } from './inference/dev-model.js';
export { providerError, retryAfter } from './inference/errors.js';
export { type Charging, type InferDeps, Inference } from './inference/infer.js';
export { migrations } from './migrations/index.js';
export {
  type Catalogue,
  CATALOGUE_FILE,
  CatalogueError,
  type CatalogueFamily,
  type CatalogueModel,
  FIRST_PARTY_PROVIDER,
  loadCatalogue,
  parseCatalogue,
} from './models/catalogue.js';
export { type ModelFilter, ModelsDomain, type ModelView, type Unavailable } from './models/models.js';
export { KEK_FILE, keyProviders, OPENAI_COMPATIBLE, providerKeyKeks, ProviderKeys, sealAad } from './models/provider-keys.js';
export { SCHEMA } from './models/store.js';
export { type ModelsSettings, modelsSettings, modelsSettingsSchema } from './settings.js';
export { pinnedFetch } from '@svc/kit';

/**
 * The models service: the model catalogue (data/catalogue.json, checked once at start), each
 * model's availability for the caller, accounts' provider keys (sealed at rest), and inference for
 * the runtime (Infer, streamed), with the development model served on loopback in this process.
 */
export const modelsService = defineService({
  name: 'models',
  grpcServiceName: 'svc.models.v1.ModelsService',
  definition: models.ModelsServiceService,
  // Not 'bus': events wait in the outbox through a NATS outage.
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  settings: modelsSettingsSchema,
  async create(ctx) {
    const catalogue = loadCatalogue();
    const settings = modelsSettings(ctx.settings);
    const sql = await ctx.backends.sql();
    const { keks, file } = providerKeyKeks(settings.keks, ctx.config.SVC_DATA_DIR);
    if (file) ctx.log.info({ kekFile: file }, 'provider keys are sealed under a generated KEK (set SVC_MODELS_KEK to choose it)');
    let relay: OutboxRelay | undefined;
    const keys = new ProviderKeys({
      sql,
      envelope: new Envelope(keks),
      providers: keyProviders(catalogue),
      allowedHosts: settings.allowedHosts,
      kick: () => relay?.kick(),
    });
    const domain = new ModelsDomain(catalogue, settings, (p) => keys.providersOf(p));
    const dev = await startDevModelServer();
    const credits = new Credits({
      sql,
      isOperator: async (principalToken) => Boolean((await accountsClient(ctx.registry).getMe({}, { principalToken })).account?.operator),
      kick: () => relay?.kick(),
      afterCharge: (accountId: string, balance: string): Promise<void> => creditAlerts.check(accountId, balance),
    });
    const creditAlerts: CreditAlerts = new CreditAlerts({
      sql,
      store: new CreditAlertStore(sql),
      balance: (accountId: string): Promise<string> => credits.store.balance(accountId),
      kick: () => relay?.kick(),
    });
    const usageStore = new UsageStore(sql);
    const usage = new Usage({ store: usageStore, catalogue, settings, keyedProviders: (p) => keys.providersOf(p), log: ctx.log });
    const advisor = new Advisor(catalogue, domain, async (p, m) => {
      if (m.provider === 'svc' || (m.pricing.inputPerMillion === 0 && m.pricing.outputPerMillion === 0)) return false;
      return !(await keys.providersOf(p)).has(m.provider);
    });
    const creditViews = new CreditViews({ usage: usageStore, credits: credits.store });
    const inference = new Inference({ catalogue, settings, keys, credits, usage, dev: () => dev });
    ctx.log.info({ models: catalogue.models.length, firstParty: Boolean(settings.firstParty.url) }, 'model catalogue loaded');
    return {
      handlers: {
        ...handlers(domain, keys, inference, credits),
        ...viewHandlers(advisor, usage, creditViews, creditAlerts, { toModel, toCreditEntry }),
      },
      async start() {
        const bus = await ctx.backends.bus();
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        // After a KEK rotation (a new key first in SVC_MODELS_KEK), keys wrapped with an older one are
        // re-wrapped; once the log says so on every replica, the old KEK may be removed.
        keys.rewrapAll().then(
          (n) => n && ctx.log.info({ rewrapped: n }, 'provider keys re-wrapped with the current KEK'),
          (err: Error) => ctx.log.warn({ err: err.message }, 're-wrapping provider keys failed; they still open with their KEK'),
        );
      },
      async stop() {
        await relay?.stop();
        await dev.close();
      },
    };
  },
});
