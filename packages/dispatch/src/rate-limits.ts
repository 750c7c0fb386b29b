/**
 * Rate limits (docs/reliability.md), a dispatcher policy: a token bucket per API key and one per
 * acting account, for each class of operation (`read`, `write`, `compute`), kept in the cache
 * backend (Redis; memory when embedded) so that every gateway replica draws on the same buckets. A
 * call takes one token from its key's bucket and one from its account's; when either is empty it
 * is refused 429 `rate_limited` with `Retry-After`. Every answer of a limited call carries the IETF
 * draft's `RateLimit-Policy` (each bucket's quota `q` and window `w`, in seconds) and `RateLimit`
 * (the tokens left `r`, and `t`: seconds until the bucket is full again). The dispatcher meters
 * each operation it invokes for a caller (Dispatcher.invoke); a protocol front that answers a
 * request of its own (a WebDAV method, an MCP message) has it metered by class (Dispatcher.meter).
 *
 * To keep the cache off the path of most requests, a replica takes tokens in leases (a twentieth of
 * the bucket, at most 50) and spends them locally: never more than the bucket allows, at the price
 * of a replica holding a few tokens another could have used.
 */
import type { Route } from '@svc/api';
import { type Cache, DomainError, type Principal } from '@svc/kit';

export type OperationClass = 'read' | 'write' | 'compute';
export const OPERATION_CLASSES: readonly OperationClass[] = ['read', 'write', 'compute'];

/** A bucket's size: `capacity` tokens, refilled evenly over `windowSeconds`. */
export interface Bucket {
  capacity: number;
  windowSeconds: number;
}
export type Limits = Record<OperationClass, Bucket>;

/** Operations that run code or start an agent's run: the costly class. */
const COMPUTE = new Set(['code.run', 'threads.inject', 'threads.create']);

export function classOf(route: Route): OperationClass {
  if (COMPUTE.has(route.id)) return 'compute';
  return route.method === 'get' ? 'read' : 'write';
}

/** Parses `read=2000/10,write=1000/10,compute=100/10` (capacity/seconds) over `defaults`; `off` is null. */
export function parseLimits(spec: string, defaults: Limits): Limits | null {
  if (spec.trim() === 'off') return null;
  const out: Limits = { ...defaults };
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^(read|write|compute)=(\d{1,12})\/(\d{1,6})$/.exec(part);
    if (!m || Number(m[2]) < 1 || Number(m[3]) < 1) throw new Error(`${part}: must look like read=1000/10 (capacity/seconds)`);
    out[m[1] as OperationClass] = { capacity: Number(m[2]), windowSeconds: Number(m[3]) };
  }
  return out;
}

interface Local {
  /** Tokens leased from the shared bucket, not yet spent. */
  tokens: number;
  /** The shared bucket's tokens after the last lease, and when (ms). */
  left: number;
  at: number;
}

export interface Admission {
  /** The RateLimit-Policy and RateLimit headers of the answer. */
  headers: Record<string, string>;
  /** Set when a bucket is empty: the 429 to answer (with Retry-After). */
  denied?: DomainError;
}

export class RateLimiter {
  private readonly local = new Map<string, Local>();
  private readonly entries = new Map<string, Entry>();
  private readonly policies: Record<OperationClass, string>;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly cache: Cache,
    /** Null: that scope is not limited (`off`). */
    private readonly perKey: Limits | null,
    private readonly perAccount: Limits | null,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    const policy = (name: string, b: Bucket) => `"${name}";q=${b.capacity};w=${b.windowSeconds}`;
    this.policies = Object.fromEntries(
      OPERATION_CLASSES.map((c) => [
        c,
        [perKey && policy(`key-${c}`, perKey[c]), perAccount && policy(`account-${c}`, perAccount[c])].filter(Boolean).join(', '),
      ]),
    ) as Record<OperationClass, string>;
    // Leases of keys no longer calling are forgotten (their few tokens go unused).
    this.sweep = setInterval(() => {
      const old = Date.now() - 600_000;
      for (const [k, e] of this.entries) if (e.used < old) this.entries.delete(k);
      for (const [k, l] of this.local) if (l.at < old) this.local.delete(k);
    }, 60_000);
    this.sweep.unref();
  }

  close(): void {
    clearInterval(this.sweep);
  }

  /**
   * Takes a token for the request from its key's and its account's buckets, or says why not (an
   * operation of the route table, or a class for the protocol fronts: WebDAV, MCP).
   * Synchronous while the local leases last (no promise, no cache call): most requests.
   */
  admit(route: Route | OperationClass, p: Principal): Admission | Promise<Admission> {
    const cls = typeof route === 'string' ? route : classOf(route);
    const who = p.keyId ?? p.hostId ?? p.agentId ?? 'anonymous';
    const id = `${cls} ${who} ${p.accountId}`;
    let entry = this.entries.get(id);
    if (!entry) this.entries.set(id, (entry = this.entryOf(cls, who, p.accountId)));
    const now = Date.now();
    entry.used = now;
    for (const b of entry.buckets) if (b.local.tokens < 1) return this.lease(entry, now);
    return this.settle(entry, now);
  }

  private entryOf(cls: OperationClass, who: string, accountId: string): Entry {
    const buckets: EntryBucket[] = [];
    const add = (key: string, name: string, size: Bucket, scope: string) => {
      const local = this.local.get(key) ?? { tokens: 0, left: 0, at: 0 };
      this.local.set(key, local);
      buckets.push({ key, name, size, scope, rate: size.capacity / (size.windowSeconds * 1000), local });
    };
    if (this.perKey) add(`rl:k:${cls}:${who}`, `key-${cls}`, this.perKey[cls], 'API key');
    if (this.perAccount) add(`rl:a:${cls}:${accountId}`, `account-${cls}`, this.perAccount[cls], 'account');
    return { cls, buckets, used: 0 };
  }

  /** Takes leases for the buckets that have run dry, then settles. */
  private async lease(entry: Entry, now: number): Promise<Admission> {
    const dry = entry.buckets.filter((b) => b.local.tokens < 1);
    let grants;
    try {
      grants = await this.cache.takeTokens(
        dry.map((b) => ({ key: b.key, capacity: b.size.capacity, windowMs: b.size.windowSeconds * 1000, want: leaseOf(b.size) })),
      );
    } catch (err) {
      // The cache is down: the API stays up, unlimited, until it is back (the operator hears of it).
      this.onError(err);
      return { headers: {} };
    }
    dry.forEach((b, i) => {
      b.local.tokens += grants[i]!.granted;
      b.local.left = grants[i]!.left;
      b.local.at = now;
    });
    return this.settle(entry, now);
  }

  /** Spends a token from each bucket, or refuses; the headers say where the buckets stand. */
  private settle(entry: Entry, now: number): Admission {
    const empty = entry.buckets.find((b) => b.local.tokens < 1);
    let limit = '';
    let untilOne = 1;
    for (const b of entry.buckets) {
      const l = b.local;
      const shared = Math.min(b.size.capacity, l.left + (now - l.at) * b.rate);
      const remaining = Math.max(0, Math.floor(l.tokens + shared) - (empty ? 0 : 1));
      limit += `${limit ? ', ' : ''}"${b.name}";r=${remaining};t=${Math.ceil((b.size.capacity - shared) / b.rate / 1000)}`;
      if (b === empty) untilOne = Math.max(1, Math.ceil((1 - shared) / b.rate / 1000));
    }
    const headers = { 'RateLimit-Policy': this.policies[entry.cls], RateLimit: limit };
    if (empty) {
      const denied = new DomainError('rate_limited', 'rate_limited', `Too many ${entry.cls} requests for this ${empty.scope}; try again later.`, {
        retryAfterSeconds: untilOne,
      });
      return { headers, denied };
    }
    for (const b of entry.buckets) b.local.tokens -= 1;
    return { headers };
  }
}

interface EntryBucket {
  key: string;
  name: string;
  scope: string;
  size: Bucket;
  /** Tokens per millisecond. */
  rate: number;
  local: Local;
}

/** A caller's buckets for one class, resolved once. */
interface Entry {
  cls: OperationClass;
  buckets: EntryBucket[];
  used: number;
}

/** How many tokens a replica takes at once: a twentieth of the bucket, at least 1, at most 50. */
const leaseOf = (b: Bucket) => Math.max(1, Math.min(50, Math.floor(b.capacity / 20)));
