import { defineService, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { drive } from '@svc/proto';

import { DriveDomain } from './items/domain.js';
import { SCHEMA } from './items/store.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { domainSettings, driveSettings, driveSettingsSchema } from './settings.js';
import { txtLookup } from './sites/dns.js';
import { startDomainChecks } from './sites/domain-checks.js';
import { Domains } from './sites/domains.js';
import { Sites } from './sites/sites.js';

export { DriveDomain } from './items/domain.js';
export { etagOf, validName } from './items/rules.js';
export type { DriveSettings } from './items/types.js';
export { domainSettings, driveSettings, driveSettingsSchema } from './settings.js';

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
    const settings = { ...driveSettings(ctx.settings), grepNice: ctx.config.SVC_HEAVY_WORK_NICE };
    let relay: OutboxRelay | undefined;
    const domain = new DriveDomain(sql, blobs, settings, () => relay, ctx.log);
    const sites = new Sites(domain);
    const domainsSettings = domainSettings(ctx.settings);
    const domains = new Domains(sites, domainsSettings, txtLookup(domainsSettings));
    let timer: NodeJS.Timeout | undefined;
    let domainChecks: { stop(): Promise<void> } | undefined;
    return {
      handlers: handlers(domain, sites, domains),
      async start() {
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        timer = setInterval(() => {
          domain.collect().catch((err) => ctx.log.warn({ err }, 'drive collection failed'));
        }, settings.collectEveryMs);
        timer.unref();
        // Verified custom domains looked up again, expired pending claims deleted (docs/sites.md, "Re-checks").
        domainChecks = startDomainChecks(domains);
      },
      async stop() {
        clearInterval(timer);
        // A sweep in flight finishes first: its transactions and events need the pool and the relay.
        await domainChecks?.stop();
        await relay?.stop();
      },
    };
  },
});
