/**
 * Per-account storage quotas (docs/drive.md, "Quotas"): bytes of files, bytes of replaced content
 * kept, content writes a minute. A write is checked before any byte where its size is known, and
 * again in its commit's transaction, after its change: a refusal there rolls the whole write back.
 */
import { DomainError, type Queryable } from '@svc/kit';

import type { QuotaLimits } from '../items/types.js';
import { QuotaStore } from './store.js';

const store = new QuotaStore();

export const quotaExceeded = (limit: number, used: number, adding: number) =>
  new DomainError(
    'too_large',
    'quota_exceeded',
    `The account's files would take ${used + adding} bytes (${used} now, ${adding} more), over its quota of ${limit} bytes (bytesLive); nothing was written. Delete files to make room.`,
    { quota: 'bytesLive', limit, used, adding },
  );

export const writeRateExceeded = (limit: number, retryAfterSeconds: number) =>
  new DomainError(
    'rate_limited',
    'write_rate_exceeded',
    `The account made its ${limit} content writes of this minute (writesPerMinute); nothing was written. Try again in ${retryAfterSeconds} s.`,
    { quota: 'writesPerMinute', limit, retryAfterSeconds },
  );

/** A write that takes the account's files from `before` to `after` bytes goes over: growing past the limit (shrinking never does). */
export function overLive(limits: QuotaLimits, before: number, after: number): boolean {
  return after > limits.bytesLive && after > before;
}

/** What the checks before a write judge: the account's writes of this minute and its files' bytes. */
export type WriteState = Awaited<ReturnType<QuotaStore['beforeWrite']>>;

/** Reads the account's write state (one statement), so that a write can read it alongside its other checks. */
export function writeState(q: Queryable, accountId: string): Promise<WriteState> {
  return store.beforeWrite(q, accountId);
}

/**
 * Before any byte is read: refused when the account made its minute's writes, or when the growth
 * it declares (the new size less the size replaced) takes its files over the quota.
 */
export function judgeWrite(limits: QuotaLimits, state: WriteState, growth?: number): void {
  const { window: w, live } = state;
  if (w.writes >= limits.writesPerMinute) throw writeRateExceeded(limits.writesPerMinute, w.secondsLeft);
  if (growth !== undefined && growth > 0 && overLive(limits, live, live + growth)) throw quotaExceeded(limits.bytesLive, live, growth);
}

/** judgeWrite on the state read now. */
export async function precheck(q: Queryable, accountId: string, limits: QuotaLimits, growth?: number): Promise<void> {
  judgeWrite(limits, await writeState(q, accountId), growth);
}

/**
 * In a write's transaction, once its change is made: counts `writes` writes (locking the
 * account's count, so that an account's commits measure its files one after the other) and
 * refuses the write over the rate, or when its `growth` took the files over the quota.
 */
export async function charge(q: Queryable, accountId: string, limits: QuotaLimits, growth: number, writes = 1): Promise<void> {
  if (growth <= 0) {
    const w = await store.countWrites(q, accountId, writes);
    if (writes > 0 && w.writes > limits.writesPerMinute) throw writeRateExceeded(limits.writesPerMinute, w.secondsLeft);
    return;
  }
  const { window: w, live } = await store.countWritesAndUsage(q, accountId, writes);
  if (writes > 0 && w.writes > limits.writesPerMinute) throw writeRateExceeded(limits.writesPerMinute, w.secondsLeft);
  if (overLive(limits, live - growth, live)) throw quotaExceeded(limits.bytesLive, live - growth, growth);
}

/**
 * Drops the account's oldest kept versions beyond its version quota; the contents to release. Only
 * an account over it has its versions ranked (their count is the account's, not the write's).
 */
export async function trimVersions(q: Queryable, accountId: string, limits: QuotaLimits): Promise<string[]> {
  if ((await store.usage(q, accountId)).versions <= limits.bytesVersions) return [];
  return store.dropOldVersions(q, accountId, limits.bytesVersions);
}

/**
 * The account's quotas for GET /drive/usage: limits, bytes now, and the writes of the last minute
 * the account wrote in (with that minute's start), so that two reads without a write between them
 * are equal.
 */
export async function quotaOf(q: Queryable, accountId: string, limits: QuotaLimits) {
  const [{ live: bytesLive, versions: bytesVersions }, w] = [await store.usage(q, accountId), await store.lastWindow(q, accountId)];
  return {
    limits: { bytesLive: limits.bytesLive, bytesVersions: limits.bytesVersions, writesPerMinute: limits.writesPerMinute },
    usage: { bytesLive, bytesVersions, writes: w.writes, windowStart: w.windowStart?.toISOString() ?? '' },
  };
}
