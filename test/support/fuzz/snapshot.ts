import type { Route } from '@svc/api';

import type { TestStack } from '../stack';
import { toHttp, validInput } from './input';
import { hashSeed, Rng } from './prng';
import { send } from './send';
import type { Tenant } from './tenants';

/**
 * Fields that change by themselves (clocks, cursors, use counts, market prices and quotes), and `/me`'s
 * `organizations`, which the gateway's cache of a key's principal shows up to 60 s late
 * (services/gateway/src/auth.ts): left out of a comparison.
 */

const VOLATILE =
  /(At|Ms)$|^(last|next)|requestId|cursor|usageCount|organizations|^(cash|equity|balances|positions|markPrice|marketValue|bids|asks|lastPrice|reference|price|spread|mid|status|now|since|bid|ask|bidQty|askQty|spreadBps)$/i;

function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !VOLATILE.test(k))
        .map(([k, v]) => [k, stable(v)]),
    );
  }
  return value;
}

/**
 * What a tenant sees of its own resources: every read operation with its own ids (the same
 * inputs each time, from `seed`), status and answer without the fields that change by themselves.
 * Taken before and after the run: the other tenant's cases must not have changed any of it.
 */
export async function snapshot(t: TestStack, routes: Route[], tenant: Tenant, seed: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const r of routes.filter((x) => x.method === 'get' && x.auth === 'key' && x.principals.includes('human'))) {
    const { input } = validInput(r, new Rng(hashSeed(seed, 'snapshot', r.id)), tenant.pool);
    const req = toHttp(r, input);
    const a = await send(t.url, { ...req, headers: { ...req.headers, authorization: `Bearer ${tenant.key}` } }, 20_000);
    let body: unknown = a.text;
    try {
      body = stable(JSON.parse(a.text));
    } catch {
      // not JSON (a file's bytes): compared as they are
    }
    out.set(`${r.id} ${req.path}`, `${a.status} ${JSON.stringify(body)}`);
  }
  return out;
}

/** What changed between two snapshots. */
export function changes(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) out.push(`${k}: ${v.slice(0, 300)} -> ${after.get(k)?.slice(0, 300)}`);
  return out;
}
