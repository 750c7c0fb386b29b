import { AsyncLocalStorage } from 'node:async_hooks';
import { EventEmitter } from 'node:events';

import { oidcProviderStore, providerContextGate } from '../../dist/fronts/oauth/context-gate.js';

// oidc-provider's AsyncLocalStorage, left enabled after its requests, hooked every promise of the
// process on Node before 24 (docs/oauth.md, "Cost between requests").

const tick = () => new Promise((r) => setTimeout(r, 5));

test("the provider's store is disabled once its last request has answered, not before; each request still sees its own", async () => {
  const store = new AsyncLocalStorage<string>();
  const enabled = () => (store as unknown as { enabled?: boolean }).enabled;
  const gate = providerContextGate(store, true);
  const seen: Array<string | undefined> = [];
  let release!: () => void;
  const slow = gate(() =>
    store.run('slow', async () => {
      await new Promise<void>((r) => (release = r));
      await tick();
      seen.push(store.getStore());
    }),
  );
  await tick();
  // A second request answers while the first is still in the provider: the store stays on for it.
  await gate(() => store.run('quick', async () => (await tick(), seen.push(store.getStore()))));
  release();
  await slow;
  expect(seen).toEqual(['quick', 'slow']);
  // None left: disabled (the hook-based store of Node before 24 says so; every store answers nothing outside a run).
  if (enabled() !== undefined) expect(enabled()).toBe(false);
  expect(store.getStore()).toBeUndefined();
  // The next request enables it again.
  expect(await gate(() => store.run('next', async () => (await tick(), store.getStore())))).toBe('next');
});

test('a request that fails counts as answered; where async context is cheap nothing is disabled', async () => {
  let disabled = 0;
  const counted = { disable: () => void disabled++ };
  const costly = providerContextGate(counted, true);
  await expect(costly(async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
  expect(disabled).toBe(1);
  const cheap = providerContextGate(counted, false);
  await cheap(async () => undefined);
  expect(disabled).toBe(1);
});

test('a request whose response closes counts as answered though its work never settles, and only once', async () => {
  let disabled = 0;
  const gate = providerContextGate({ disable: () => void disabled++ }, true);
  const response = new EventEmitter();
  let settle!: () => void;
  const hung = gate(() => new Promise<void>((r) => (settle = r)), response as never);
  await tick();
  expect(disabled).toBe(0);
  // The client went (the server's request timeout, or it hung up): the store is off at once.
  response.emit('close');
  expect(disabled).toBe(1);
  // A request in flight keeps it on; the hung one settling later does not count again.
  let release!: () => void;
  const other = gate(() => new Promise<void>((r) => (release = r)));
  settle();
  await hung;
  expect(disabled).toBe(1);
  release();
  await other;
  expect(disabled).toBe(2);
});

test("the gate's store is the one oidc-provider enters (checked against Provider.ctx)", async () => {
  const store = await oidcProviderStore();
  expect(store).toBeInstanceOf(AsyncLocalStorage);
});
