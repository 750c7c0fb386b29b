import { defineService } from '@svc/kit';
import { accounts } from '@svc/proto';

import { bootstrap } from './bootstrap.js';
import { migrations } from './migrations/index.js';
import { handlers } from './server.js';
import { AccountStore, SCHEMA } from './store.js';

export const accountsService = defineService({
  name: 'accounts',
  grpcServiceName: 'svc.accounts.v1.AccountsService',
  definition: accounts.AccountsServiceService,
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  async create(ctx) {
    const store = new AccountStore(await ctx.backends.sql());
    return {
      handlers: handlers(store),
      start: () => bootstrap(ctx, store),
    };
  },
});
