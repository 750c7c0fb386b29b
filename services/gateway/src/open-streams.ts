import { DomainError } from '@svc/kit';

/** The longest delay setTimeout takes (about 24.8 days); a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const keyRevoked = () => new DomainError('unauthenticated', 'key_revoked', 'The API key was revoked: this stream has ended.');
export const keyExpired = () => new DomainError('unauthenticated', 'key_expired', 'The API key has expired: this stream has ended.');

interface Held {
  end: (why: DomainError) => void;
  timer?: NodeJS.Timeout;
}

/**
 * What a key holds open on this replica past its authentication (a live event stream, a Git
 * transfer, a WebDAV or API content transfer), by key id (a host's id for a host credential).
 * Every other request of a key is authenticated anew; these would outlive a revocation, so the
 * revocation handler ends them (`end`), and each ends by itself at the key's expiry.
 */
export class OpenStreams {
  private readonly byKey = new Map<string, Set<Held>>();

  /**
   * Registers one open stream of `keyId`: `end` is called once, with why, when the key is revoked
   * or reaches `expiresAt` (ms, null: never). Returns the release to call when the stream ends on
   * its own (idempotent).
   */
  hold(keyId: string, expiresAt: number | null, end: (why: DomainError) => void): () => void {
    const held: Held = { end };
    let set = this.byKey.get(keyId);
    if (!set) this.byKey.set(keyId, (set = new Set()));
    set.add(held);
    const release = () => {
      if (held.timer) clearTimeout(held.timer);
      set.delete(held);
      if (!set.size && this.byKey.get(keyId) === set) this.byKey.delete(keyId);
    };
    if (expiresAt !== null) {
      // Always on a timer, even when already expired (a race with the cache): `end` never runs before `hold` returns.
      const arm = () => {
        const left = expiresAt - Date.now();
        if (left > 0) return void (held.timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS)).unref());
        release();
        end(keyExpired());
      };
      held.timer = setTimeout(arm, Math.max(0, Math.min(expiresAt - Date.now(), MAX_TIMER_MS))).unref();
    }
    return release;
  }

  /** Ends every open stream of a revoked key; returns how many there were. */
  end(keyId: string): number {
    const set = this.byKey.get(keyId);
    if (!set) return 0;
    this.byKey.delete(keyId);
    for (const held of set) {
      if (held.timer) clearTimeout(held.timer);
      held.end(keyRevoked());
    }
    return set.size;
  }

  /** Streams open on this replica. */
  get size(): number {
    let n = 0;
    for (const set of this.byKey.values()) n += set.size;
    return n;
  }
}
