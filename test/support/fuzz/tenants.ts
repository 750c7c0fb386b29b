import type { Route } from '@svc/api';

import type { TestStack } from '../stack';
import { validInput } from './input';
import { toHttp } from './input';
import { IdPool } from './pools';
import { hashSeed, Rng } from './prng';
import { send } from './send';

/** One tenant of the run: a person's account with resources of every kind, made through the API. */
export interface Tenant {
  name: string;
  accountId: string;
  /** The person's key, and an agent's key of the account. */
  key: string;
  agentKey: string;
  pool: IdPool;
  /** What must never reach the other tenant: its keys and the marker its resources carry. */
  secrets: string[];
  /** Fixtures that could not be made (reported, not fatal). */
  notes: string[];
}

/**
 * A tenant with real fixtures: an organization, an agent with a key, a folder and a file, a thread,
 * a site with a deployment, a profile with a commit and a branch, a paired host, a standing grant,
 * an API key, a paper order. Each resource that can carry text carries `marker`. Every answer's
 * ids go to the tenant's pool.
 */
export async function makeTenant(t: TestStack, name: string, marker: string): Promise<Tenant> {
  const created = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
  const key = created.body.key as string;
  const pool = new IdPool();
  const notes: string[] = [];
  const me = (await t.ok('GET', '/me', key)).body;
  pool.protected.add(me.keyId);
  pool.add(me.accountId);
  const step = async (what: string, method: string, path: string, body?: unknown, headers?: Record<string, string>, as = key) => {
    const res = await t.call(method, path, { key: as, body, headers });
    if (res.status >= 300) {
      notes.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      return undefined;
    }
    pool.harvest(JSON.stringify(res.body ?? ''));
    return res.body;
  };
  await step('organization', 'POST', '/accounts', { kind: 'organization', name: `${name} org` });
  const agent = await step('agent', 'POST', '/agents', { name: `${name} agent`, description: marker, instructions: marker });
  const agentKeyBody = agent && (await step('agent key', 'POST', `/agents/${agent.id}/keys`, { name: 'fuzz' }));
  if (agentKeyBody?.id) pool.protected.add(agentKeyBody.id);
  // The agent whose key the fuzzer uses stays: its deletion would make that key fail from then on.
  if (agent?.id) pool.protected.add(agent.id);

  await step('api key', 'POST', '/api/api-keys', { name: `${name} spare key` });
  await step('my key', 'POST', '/me/api-keys', { name: `${name} spare key 2` });
  const folder = await step('folder', 'POST', '/drive/folders', { name: `${marker}-folder` });
  const file = await t.call('POST', `/drive/upload?name=${encodeURIComponent(`${marker}.txt`)}${folder ? `&parentId=${folder.id}` : ''}`, {
    key,
    body: `secret content ${marker}\n`,
    headers: { 'content-type': 'text/plain' },
  });
  if (file.status === 201) pool.harvest(JSON.stringify(file.body));
  else notes.push(`file: ${file.status}`);
  if (folder) {
    await t.call('POST', `/drive/upload?name=index.html&parentId=${folder.id}`, {
      key,
      body: `<h1>${marker}</h1>`,
      headers: { 'content-type': 'text/html' },
    });
  }
  if (agent) await step('thread', 'POST', '/threads', { agentId: agent.id, title: `${marker} thread`, message: `hello ${marker}` });
  const slug = `${name.toLowerCase().replace(/[^a-z0-9]/g, '')}-${Date.now().toString(36)}`;
  const site = await step('site', 'POST', '/sites', { slug, title: `${marker} site` });
  if (site && folder) await step('deployment', 'POST', `/sites/${site.id}/deployments`, { folderId: folder.id });
  const profile = await step('profile', 'POST', '/profiles', { name: `${marker} profile` });
  if (profile) {
    await step('profile change', 'PATCH', `/profiles/${profile.id}`, {
      profileData: { workingChanges: { constraints: [{ id: 'c1', question: marker, answer: 'yes' }], exemplars: [], comparisons: [] } },
    });
    await step('commit', 'POST', `/profiles/${profile.id}/commits`, { message: marker });
    await step('branch', 'POST', `/profiles/${profile.id}/branches`, { name: 'feature' });
  }
  const host = await step('host', 'POST', `/accounts/${me.accountId}/hosts`, { name: `${name} laptop` });
  if (agent) await step('grant', 'POST', `/accounts/${me.accountId}/standing-grants`, { granteeId: agent.id, verbs: ['drive.read'] });
  await step('order', 'POST', '/trading/order', { venue: 'paper', symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '0.01', price: '1' });
  const secrets = [marker, key, agentKeyBody?.key].filter((s): s is string => typeof s === 'string');
  if (host?.credential) secrets.push(host.credential);
  return { name, accountId: me.accountId, key, agentKey: agentKeyBody?.key ?? key, pool, secrets, notes };
}

/** Writes that make resources (POST and PUT, not the ones that remove or reset). */
export const makesResources = (r: Route) => (r.method === 'post' || r.method === 'put') && !destructive(r);

/** Operations that remove or replace what others use: run after every other one. */
export const destructive = (r: Route) => r.method === 'delete' || /revoke|remove|unpair|reset|rotate|rollback|delete/i.test(r.id);

/**
 * The valid case of every operation that makes something, as this tenant: resources of
 * operations this file does not know (added later) are made and their ids gathered too.
 */
/** Removes expiry fields (`ttlSeconds`, `expiresInSeconds`, ...) from a generated body, at any depth. */
function stripTtl(value: unknown): void {
  if (Array.isArray(value)) return value.forEach(stripTtl);
  if (!value || typeof value !== 'object') return;
  for (const k of Object.keys(value)) {
    if (/^(ttl|expires)/i.test(k)) delete (value as Record<string, unknown>)[k];
    else stripTtl((value as Record<string, unknown>)[k]);
  }
}

export async function seedGeneric(t: TestStack, tenant: Tenant, routes: Route[], seed: number): Promise<number> {
  let made = 0;
  for (const r of routes.filter((x) => x.auth === 'key' && makesResources(x) && !x.authority)) {
    const rng = new Rng(hashSeed(seed, 'seed', r.id));
    const { input } = validInput(r, rng, tenant.pool);
    // What the snapshot compares must not change by itself: nothing made here expires.
    if (input.body && typeof input.body === 'object') stripTtl(input.body);
    const a = await send(t.url, { ...toHttp(r, input), headers: { ...toHttp(r, input).headers, authorization: `Bearer ${tenant.key}` } }, 20_000);
    if (a.status >= 200 && a.status < 300) {
      made++;
      tenant.pool.harvest(a.text);
    }
  }
  return made;
}
