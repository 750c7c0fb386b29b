import { defineService, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { drive } from '@svc/proto';

import { DriveDomain } from './domain.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { domainSettings, driveSettings, driveSettingsSchema } from './settings.js';
import { txtLookup } from './sites/dns.js';
import { Domains } from './sites/domains.js';
import { Sites } from './sites/sites.js';
import { SCHEMA } from './store.js';

export { DriveDomain } from './domain.js';
export { etagOf, validName } from './rules.js';
export { driveSettings, driveSettingsSchema } from './settings.js';
export type { DriveSettings } from './types.js';

export const driveService = defineService({
  name: 'drive',
  grpcServiceName: 'svc.drive.v1.DriveService',
  definition: drive.DriveServiceService,
  needs: ['sql', 'bus', 'blobs'],
  schema: SCHEMA,
  migrations,
  settings: driveSettingsSchema,
  async create(ctx) {
    const [sql, bus, blobs] = await Promise.all([ctx.backends.sql(), ctx.backends.bus(), ctx.backends.blobs()]);
    const settings = driveSettings(ctx.settings);
    let relay: OutboxRelay | undefined;
    const domain = new DriveDomain(sql, blobs, settings, () => relay, ctx.log);
    const sites = new Sites(domain);
    const domainsSettings = domainSettings(ctx.settings);
    let timer: NodeJS.Timeout | undefined;
    return {
      handlers: handlers(domain, sites, new Domains(sites, domainsSettings, txtLookup(domainsSettings))),
      async start() {
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        timer = setInterval(() => {
          domain.collect().catch((err) => ctx.log.warn({ err }, 'drive collection failed'));
        }, settings.collectEveryMs);
        timer.unref();
      },
      async stop() {
        clearInterval(timer);
        await relay?.stop();
      },
    };
  },
});
