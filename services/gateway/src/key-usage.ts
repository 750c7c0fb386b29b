import type { Cache } from '@svc/kit';

/**
 * How often each key (or OAuth grant) was used on this replica, and when last: counted in memory on
 * every authenticated request (auth.ts) and moved now and then to the shared cache, where the keys
 * service collects them, so that counting costs a request no round trip.
 */
export class KeyUsage {
  private readonly usage = new Map<string, { n: number; last: number }>();

  count(keyId: string, now: number): void {
    const u = this.usage.get(keyId);
    if (u) {
      u.n++;
      u.last = now;
    } else this.usage.set(keyId, { n: 1, last: now });
  }

  /** Moves this replica's counts to the shared cache. */
  async flush(cache: Cache): Promise<void> {
    if (!this.usage.size) return;
    const batch = [...this.usage];
    this.usage.clear();
    await Promise.all(
      batch.map(async ([id, u]) => {
        await cache.hincrby('keys:usage:count', id, u.n);
        await cache.hmax('keys:usage:last', { [id]: u.last });
      }),
    );
  }
}
