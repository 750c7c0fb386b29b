import { defineService, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { profiles } from '@svc/proto';

import { migrations } from './migrations/index.js';
import { ProfilesDomain } from './profiles/index.js';
import { SCHEMA } from './profiles/store.js';
import { handlers } from './server.js';
import { profilesSettingsSchema } from './settings.js';

export { migrations } from './migrations/index.js';
export { DIFF_MAX_BYTES, diffText } from './profiles/diff-text.js';
export { buildCommitSnapshot, etagOf, ProfilesDomain } from './profiles/index.js';
export { parseJson } from './profiles/input.js';
export { diffSnapshots, mergeSnapshots } from './profiles/merge.js';
export { canonical, chunkItems, deepEqual, MAX_DEPTH, nextManifest, snapshotParts, toManifest } from './profiles/snapshots.js';
export { SCHEMA } from './profiles/store.js';
export { profilesSettingsSchema } from './settings.js';

/** The profiles service: taste profiles with immutable versions, branches and merges. */
export const profilesService = defineService({
  name: 'profiles',
  grpcServiceName: 'svc.profiles.v1.ProfilesService',
  definition: profiles.ProfilesServiceService,
  needs: ['sql', 'bus'],
  schema: SCHEMA,
  migrations,
  settings: profilesSettingsSchema,
  async create(ctx) {
    const [sql, bus] = await Promise.all([ctx.backends.sql(), ctx.backends.bus()]);
    let relay: OutboxRelay | undefined;
    const domain = new ProfilesDomain(sql, () => relay);
    return {
      handlers: handlers(domain, { mergesPerAccount: ctx.settings.SVC_PROFILES_MERGES_PER_ACCOUNT }),
      async start() {
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
      },
      async stop() {
        await relay?.stop();
      },
    };
  },
});
