import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';

import { cacheUnavailable } from '../errors.js';

/**
 * A small cache and counter store. Keys are given without the namespace; the implementation
 * prefixes them (`svc:` by default) so several stacks can share one Redis.
 */
export interface Cache {
  readonly kind: 'memory' | 'redis';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  del(...keys: string[]): Promise<void>;
  /** Adds to a counter in a hash field and returns the new value. */
  hincrby(key: string, field: string, by: number): Promise<number>;
  /** Sets hash fields to the larger of the old and new values (numbers). */
  hmax(key: string, values: Record<string, number>): Promise<void>;
  /** Atomically reads and empties a hash. */
  hdrain(key: string): Promise<Record<string, string>>;
  /** Counts events in a fixed window; returns the count including this one. */
  hit(key: string, windowMs: number): Promise<number>;
  /**
   * Token buckets, each `capacity` tokens refilled evenly over `windowMs` (full when new): takes up
   * to `want` whole tokens from each, as many as it holds, atomically; returns, for each, what it
   * granted and the tokens left after (fractional).
   */
  takeTokens(buckets: TokenRequest[]): Promise<TokenGrant[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface TokenRequest {
  key: string;
  capacity: number;
  windowMs: number;
  want: number;
}

export interface TokenGrant {
  granted: number;
  left: number;
}

/** One bucket's refill and take, the same arithmetic as the Redis script's. */
function takeFrom(tokens: number | undefined, at: number | undefined, now: number, b: TokenRequest): { tokens: number; granted: number } {
  const rate = b.capacity / b.windowMs;
  const full = tokens === undefined || at === undefined ? b.capacity : Math.min(b.capacity, tokens + Math.max(0, now - at) * rate);
  const granted = Math.max(0, Math.min(b.want, Math.floor(full)));
  return { tokens: full - granted, granted };
}

export function createMemoryCache(): Cache {
  const buckets = new Map<string, { tokens: number; at: number; exp: number }>();
  const values = new Map<string, { v: string; exp: number }>();
  const hashes = new Map<string, Map<string, string>>();
  const live = (k: string) => {
    const e = values.get(k);
    if (!e) return null;
    if (e.exp <= Date.now()) {
      values.delete(k);
      return null;
    }
    return e.v;
  };
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [k, e] of values) if (e.exp <= now) values.delete(k);
    for (const [k, e] of buckets) if (e.exp <= now) buckets.delete(k);
  }, 30_000);
  sweep.unref();
  const hash = (k: string) => {
    let h = hashes.get(k);
    if (!h) hashes.set(k, (h = new Map()));
    return h;
  };
  return {
    kind: 'memory',
    async get(k) {
      return live(k);
    },
    async set(k, v, ttlMs) {
      values.set(k, { v, exp: Date.now() + ttlMs });
    },
    async del(...ks) {
      for (const k of ks) {
        values.delete(k);
        hashes.delete(k);
      }
    },
    async hincrby(k, f, by) {
      const h = hash(k);
      const n = Number(h.get(f) ?? 0) + by;
      h.set(f, String(n));
      return n;
    },
    async hmax(k, vals) {
      const h = hash(k);
      for (const [f, v] of Object.entries(vals)) if (Number(h.get(f) ?? -Infinity) < v) h.set(f, String(v));
    },
    async hdrain(k) {
      const h = hashes.get(k);
      hashes.delete(k);
      return h ? Object.fromEntries(h) : {};
    },
    async hit(k, windowMs) {
      const cur = live(k);
      const n = (cur ? Number(cur) : 0) + 1;
      const exp = cur ? values.get(k)!.exp : Date.now() + windowMs;
      values.set(k, { v: String(n), exp });
      return n;
    },
    async takeTokens(requests) {
      const now = Date.now();
      return requests.map((b) => {
        const cur = buckets.get(b.key);
        const out = takeFrom(cur?.tokens, cur?.at, now, b);
        buckets.set(b.key, { tokens: out.tokens, at: now, exp: now + b.windowMs });
        return { granted: out.granted, left: out.tokens };
      });
    },
    async ping() {},
    async close() {
      clearInterval(sweep);
      values.clear();
      hashes.clear();
    },
  };
}

const HMAX = `
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if (not cur) or tonumber(cur) < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1`;

// KEYS: the buckets; ARGV: capacity, window (ms), want, for each. Time is Redis's own (one clock for
// every gateway replica). Returns granted and tokens left (as strings: Lua numbers are truncated
// to integers in replies) for each.
const TAKE_TOKENS = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  local cap = tonumber(ARGV[3 * i - 2])
  local window = tonumber(ARGV[3 * i - 1])
  local want = tonumber(ARGV[3 * i])
  local rate = cap / window
  local v = redis.call('HMGET', KEYS[i], 't', 'at')
  local t = tonumber(v[1])
  local at = tonumber(v[2])
  if (not t) or (not at) then t = cap else t = math.min(cap, t + math.max(0, now - at) * rate) end
  local granted = math.max(0, math.min(want, math.floor(t)))
  t = t - granted
  redis.call('HSET', KEYS[i], 't', tostring(t), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], window)
  out[2 * i - 1] = tostring(granted)
  out[2 * i] = tostring(t)
end
return out`;

/** The longest a cache command may take before it fails (a cache that does not answer is down). */
const COMMAND_TIMEOUT_MS = 1000;

export function createRedisCache(url: string, namespace: string): Cache {
  // Loaded here, not at the top: the embedded stack, with its in-memory cache, never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Redis: RedisClient } = require('ioredis') as typeof IORedis;
  const redis: Redis = new RedisClient(url, {
    keyPrefix: `${namespace}:`,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: 2000,
  });
  redis.on('error', () => {}); // reconnects on its own; readiness reports the outage
  redis.defineCommand('hmax', { numberOfKeys: 1, lua: HMAX });
  redis.defineCommand('takeTokens', { lua: TAKE_TOKENS });
  // Once connected, a lost connection fails commands at once (503 cache_unavailable) instead of
  // queueing them until Redis is back: a caller's deadline is not spent waiting for an outage.
  let everReady = false;
  redis.on('ready', () => (everReady = true));
  const guard =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      if (everReady && redis.status !== 'ready') throw cacheUnavailable(new Error(`redis is ${redis.status}`));
      try {
        return await fn(...a);
      } catch (err) {
        throw cacheUnavailable(err);
      }
    };
  const cache: Cache = {
    kind: 'redis',
    get: (k) => redis.get(k),
    async set(k, v, ttlMs) {
      await redis.set(k, v, 'PX', ttlMs);
    },
    async del(...ks) {
      if (ks.length) await redis.del(...ks);
    },
    hincrby: (k, f, by) => redis.hincrby(k, f, by),
    async hmax(k, vals) {
      const args = Object.entries(vals).flatMap(([f, v]) => [f, String(v)]);
      if (args.length) await (redis as unknown as { hmax(k: string, ...a: string[]): Promise<number> }).hmax(k, ...args);
    },
    async hdrain(k) {
      const res = await redis.multi().hgetall(k).del(k).exec();
      const first = res?.[0];
      if (!first || first[0]) throw first?.[0] ?? new Error('hdrain failed');
      return first[1] as Record<string, string>;
    },
    async hit(k, windowMs) {
      const res = await redis.multi().incr(k).pexpire(k, windowMs, 'NX').exec();
      return Number(res?.[0]?.[1] ?? 0);
    },
    async takeTokens(requests) {
      const args = requests.flatMap((b) => [String(b.capacity), String(b.windowMs), String(b.want)]);
      const run = (redis as unknown as { takeTokens(n: number, ...a: string[]): Promise<string[]> }).takeTokens;
      const res = await run.call(redis, requests.length, ...requests.map((b) => b.key), ...args);
      return requests.map((_, i) => ({ granted: Number(res[2 * i]), left: Number(res[2 * i + 1]) }));
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      redis.disconnect();
    },
  };
  for (const name of ['get', 'set', 'del', 'hincrby', 'hmax', 'hdrain', 'hit', 'takeTokens'] as const) {
    (cache as unknown as Record<string, unknown>)[name] = guard(cache[name] as (...a: unknown[]) => Promise<unknown>);
  }
  return cache;
}
