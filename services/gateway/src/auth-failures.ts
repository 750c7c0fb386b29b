import { DomainError } from '@svc/kit';

/** Failed authentications allowed per client address, and per presented key prefix, per window before 429. */
export const AUTH_FAILURE_LIMIT = 30;
export const AUTH_FAILURE_WINDOW_MS = 60_000;
/** Entries each map keeps at most (a flood of made-up prefixes or addresses starts it over). */
const MAX_ENTRIES = 100_000;

interface Window {
  n: number;
  until: number;
}

/**
 * Failed authentications, counted per client address and per presented key prefix (`svc_` and
 * the key's next 8 characters, its public part) in fixed windows. The counts decide only how a
 * key that does not verify is answered (401, or 429 `too_many_failed_authentications` once its
 * address or its prefix is over the limit): a key that verifies is served whatever the counts, so
 * a flood of bad keys from an address (behind a proxy, everyone's) never turns away another
 * tenant's good key.
 *
 * Hashes the keys service refused in the window are remembered too: from a flooded address or
 * prefix, the same bad key again gets its 429 without a lookup. (A made-up key is looked up once:
 * it might be somebody's good key.)
 */
export class FailedAuthentications {
  private readonly byAddress = new Map<string, Window>();
  private readonly byPrefix = new Map<string, Window>();
  private readonly refused = new Map<string, number>();

  /** Counts a failure of `address` (and `prefix`, when the secret was well formed): `err`, or the 429 that replaces it. */
  fail(address: string, prefix: string | undefined, err: DomainError): DomainError {
    const now = Date.now();
    const a = count(this.byAddress, address, now);
    const p = prefix === undefined ? undefined : count(this.byPrefix, prefix, now);
    return this.limited([a, p], now) ?? err;
  }

  /** The keys service refused this hash (unknown, revoked or expired): no key will ever verify with it in the window. */
  refusedHash(hash: string): void {
    if (this.refused.size >= MAX_ENTRIES) this.refused.clear();
    this.refused.set(hash, Date.now() + AUTH_FAILURE_WINDOW_MS);
  }

  /**
   * The 429 for a hash refused lately, presented again from a flooded address or prefix (counted
   * as another failure); undefined when it must be looked up.
   */
  knownBad(address: string, prefix: string, hash: string): DomainError | undefined {
    const now = Date.now();
    const until = this.refused.get(hash);
    if (until === undefined) return undefined;
    if (until <= now) {
      this.refused.delete(hash);
      return undefined;
    }
    if (!this.limited([this.byAddress.get(address), this.byPrefix.get(prefix)], now)) return undefined;
    return this.fail(address, prefix, new DomainError('unauthenticated', 'invalid_api_key', 'The API key is invalid, expired or revoked.'));
  }

  private limited(windows: Array<Window | undefined>, now: number): DomainError | undefined {
    let until = 0;
    for (const w of windows) if (w && w.until > now && w.n > AUTH_FAILURE_LIMIT) until = Math.max(until, w.until);
    if (!until) return undefined;
    return new DomainError('rate_limited', 'too_many_failed_authentications', 'Too many failed authentications; try again later.', {
      retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)),
    });
  }
}

function count(map: Map<string, Window>, key: string, now: number): Window {
  let w = map.get(key);
  if (!w || w.until <= now) {
    if (!w && map.size >= MAX_ENTRIES) map.clear();
    map.set(key, (w = { n: 0, until: now + AUTH_FAILURE_WINDOW_MS }));
  }
  w.n++;
  return w;
}
