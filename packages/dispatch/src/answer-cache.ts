import type { Answer } from './answers.js';

/**
 * Answers kept by a dispatcher for routes that declare `cache` (packages/api/src/route.ts): per
 * tag and acting account, then per input, each for the route's ttl. An account's answers under a
 * tag are dropped when an operation that `invalidates` the tag succeeds for it on this dispatcher,
 * and by `evict` (the gateway calls it on the owning service's events, so other replicas drop them
 * too); the ttl bounds what a lost event could leave stale. Bounded: the oldest accounts go first.
 */
export class AnswerCache {
  private readonly buckets = new Map<string, Map<string, { answer: Answer; until: number }>>();

  constructor(
    private readonly maxAccounts = 10_000,
    private readonly maxPerAccount = 32,
  ) {}

  private static bucket(tag: string, accountId: string): string {
    return `${tag}\u0000${accountId}`;
  }

  get(tag: string, accountId: string, key: string): Answer | undefined {
    const hit = this.buckets.get(AnswerCache.bucket(tag, accountId))?.get(key);
    if (!hit) return undefined;
    if (hit.until > Date.now()) return hit.answer;
    this.buckets.get(AnswerCache.bucket(tag, accountId))?.delete(key);
    return undefined;
  }

  set(tag: string, accountId: string, key: string, answer: Answer, ttlMs: number): void {
    const name = AnswerCache.bucket(tag, accountId);
    let bucket = this.buckets.get(name);
    if (!bucket) {
      if (this.buckets.size >= this.maxAccounts) this.buckets.delete(this.buckets.keys().next().value!);
      this.buckets.set(name, (bucket = new Map()));
    }
    if (bucket.size >= this.maxPerAccount && !bucket.has(key)) bucket.delete(bucket.keys().next().value!);
    bucket.set(key, { answer, until: Date.now() + ttlMs });
  }

  /** Drops an account's answers under a tag. */
  evict(tag: string, accountId: string): void {
    this.buckets.delete(AnswerCache.bucket(tag, accountId));
  }
}
