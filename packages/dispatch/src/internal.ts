import { type DriveInternalMethod, internalId, type ProfilesInternalMethod } from '@svc/api';
import type { driveClient, profilesClient } from '@svc/clients';

import type { Dispatcher, Invocation } from './dispatcher.js';

/** The calls `M` of a client, each taking only the request: who calls is the invocation's. */
type Calls<C, M extends keyof C> = {
  [K in M]: C[K] extends (req: infer Q, ...rest: never[]) => Promise<infer R> ? (req: Q) => Promise<R> : never;
};

export type DriveCalls = Calls<ReturnType<typeof driveClient>, DriveInternalMethod>;
export type ProfilesCalls = Calls<ReturnType<typeof profilesClient>, ProfilesInternalMethod>;

/**
 * A service's calls as a protocol front makes them (WebDAV, Git, public sites): each is the
 * internal operation `internal.<service>.<method>` (Route.internal) invoked through the dispatcher as
 * the invocation's caller, so the principal rules hold as they do for the API; the answer is the
 * service's reply, as the client's would be.
 */
function internalCalls<T>(dispatcher: Dispatcher, service: string, inv: Invocation): T {
  const calls: Record<string, (req: unknown) => Promise<unknown>> = {};
  return new Proxy(calls, {
    get: (_, method: string | symbol) => {
      if (typeof method !== 'string') return undefined;
      const route = dispatcher.operation(internalId(service, method));
      // Only the declared calls: not `then` (the object is no promise), nor a method the fronts do not make.
      if (!route?.internal) return undefined;
      return (calls[method] ??= async (req: unknown) => {
        const answer = await dispatcher.invoke(route, { body: req }, inv);
        return answer.kind === 'json' ? answer.body : undefined;
      });
    },
  }) as T;
}

export const driveCalls = (dispatcher: Dispatcher, inv: Invocation): DriveCalls => internalCalls(dispatcher, 'drive', inv);
export const profilesCalls = (dispatcher: Dispatcher, inv: Invocation): ProfilesCalls => internalCalls(dispatcher, 'profiles', inv);
