import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';

import { asyncContextIsCostly } from '@svc/kit';

/**
 * oidc-provider keeps the request it handles in an AsyncLocalStorage (its `helpers/als.js`), entered
 * for each of its requests and never left. On Node before 24 (unless started with
 * `--experimental-async-context-frame`) a store that has been entered puts a hook on every promise
 * of the process until it is disabled: one OAuth request made every later request of every tenant
 * slower (`GET /me` −12% in an A/B on Node 20). The gate counts the requests in the provider and
 * disables its store when the last one has answered; the provider's next request enables it again.
 * Where async context is cheap, nothing is disabled.
 *
 * A request counts as answered when its work settles or its response closes, whichever comes
 * first: a request the provider never finishes (its client went, or it waits on something that
 * never comes) does not keep the store on for every later request of every tenant.
 */
export function providerContextGate(
  store: Pick<AsyncLocalStorage<unknown>, 'disable'>,
  costly = asyncContextIsCostly,
): <T>(work: () => Promise<T>, response?: Pick<ServerResponse, 'once'>) => Promise<T> {
  let inFlight = 0;
  return async (work, response) => {
    inFlight++;
    let inside = true;
    const answered = () => {
      if (!inside) return;
      inside = false;
      if (--inFlight === 0 && costly) store.disable();
    };
    response?.once('close', answered);
    try {
      return await work();
    } finally {
      answered();
    }
  };
}

/**
 * The store oidc-provider enters: its own module (the package has no exports map), checked to be the
 * instance the provider reads (`Provider.ctx`). Undefined when it is not (another version of the
 * package): the provider then runs ungated, as it would without this.
 */
export async function oidcProviderStore(): Promise<AsyncLocalStorage<unknown> | undefined> {
  const specifier = 'oidc-provider/lib/helpers/als.js';
  try {
    const store = ((await import(specifier)) as { default?: unknown }).default;
    const { default: Provider } = (await import('oidc-provider')) as unknown as { default: { readonly ctx: unknown } };
    if (!(store instanceof AsyncLocalStorage)) return undefined;
    const probe = {};
    return store.run(probe, () => Provider.ctx) === probe ? (store as AsyncLocalStorage<unknown>) : undefined;
  } catch {
    return undefined;
  }
}
