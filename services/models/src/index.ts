import { defineService } from '@svc/kit';
import { models } from '@svc/proto';

import { loadCatalogue } from './catalogue.js';
import { ModelsDomain } from './models.js';
import { handlers } from './server.js';
import { modelsSettings, modelsSettingsSchema } from './settings.js';

export {
  type Catalogue,
  CATALOGUE_FILE,
  CatalogueError,
  type CatalogueFamily,
  type CatalogueModel,
  FIRST_PARTY_PROVIDER,
  loadCatalogue,
  parseCatalogue,
} from './catalogue.js';
export { type ModelFilter, ModelsDomain, type ModelView, type Unavailable } from './models.js';
export { type ModelsSettings, modelsSettings, modelsSettingsSchema } from './settings.js';

/**
 * The models service: the model catalogue (data/catalogue.json, checked once at start) and each
 * model's availability for the caller. No inference here: that comes with its own issue.
 */
export const modelsService = defineService({
  name: 'models',
  grpcServiceName: 'svc.models.v1.ModelsService',
  definition: models.ModelsServiceService,
  needs: [],
  settings: modelsSettingsSchema,
  async create(ctx) {
    const catalogue = loadCatalogue();
    const domain = new ModelsDomain(catalogue, modelsSettings(ctx.settings));
    ctx.log.info({ models: catalogue.models.length, firstParty: Boolean(ctx.settings.SVC_MODELS_FIRST_PARTY_URL) }, 'model catalogue loaded');
    return { handlers: handlers(domain) };
  },
});
