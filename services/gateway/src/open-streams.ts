import { DomainError } from '@svc/kit';

/** The longest delay setTimeout takes (about 24.8 days); a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const keyRevoked = () => new DomainError('unauthenticated', 'key_revoked', 'The API key was revoked: this stream has ended.');
export const keyExpired = () => new DomainError('unauthenticated', 'key_expired', 'The API key has expired: this stream has ended.');
export const membershipChanged = () =>
  new DomainError(
    'forbidden',
    'membership_changed',
    'Your membership of this organization was removed or changed: this stream has ended (open it again to be checked anew).',
  );

/** The membership an organization's stream rests on: `memberId`'s in `accountId`. */
export interface Membership {
  accountId: string;
  memberId: string;
}

interface Held {
  end: (why: DomainError) => void;
  timer?: NodeJS.Timeout;
  release: () => void;
}

/**
 * What a key holds open on this replica past its authentication (a live event stream, a Git
 * transfer, a WebDAV or API content transfer), by key id (a host's id for a host credential).
 * Every other request of a key is authenticated anew; these would outlive a revocation, so the
 * revocation handler ends them (`end`), and each ends by itself at the key's expiry.
 */
export class OpenStreams {
  private readonly byKey = new Map<string, Set<Held>>();
  /** Streams acting in an organization, by `accountId|memberId`: ended when that membership is removed or changed. */
  private readonly byMembership = new Map<string, Set<Held>>();

  /**
   * Registers one open stream of `keyId`: `end` is called once, with why, when the key is revoked,
   * reaches `expiresAt` (ms, null: never), or (for a stream acting in an organization) when
   * `membership` is removed or changed. Returns the release to call when the stream ends on its own
   * (idempotent).
   */
  hold(keyId: string, expiresAt: number | null, end: (why: DomainError) => void, membership?: Membership): () => void {
    const sets = [add(this.byKey, keyId)];
    if (membership) sets.push(add(this.byMembership, `${membership.accountId}|${membership.memberId}`));
    const held: Held = {
      end,
      release: () => {
        if (held.timer) clearTimeout(held.timer);
        for (const [map, key, set] of sets) {
          set.delete(held);
          if (!set.size && map.get(key) === set) map.delete(key);
        }
      },
    };
    for (const [, , set] of sets) set.add(held);
    if (expiresAt !== null) {
      // Always on a timer, even when already expired (a race with the cache): `end` never runs before `hold` returns.
      const arm = () => {
        const left = expiresAt - Date.now();
        if (left > 0) return void (held.timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS)).unref());
        held.release();
        end(keyExpired());
      };
      held.timer = setTimeout(arm, Math.max(0, Math.min(expiresAt - Date.now(), MAX_TIMER_MS))).unref();
    }
    return held.release;
  }

  /** Ends every open stream of a revoked key; returns how many there were. */
  end(keyId: string): number {
    return endAll(this.byKey.get(keyId), keyRevoked);
  }

  /** Ends every open stream acting in `accountId` on `memberId`'s membership (removed or changed); returns how many. */
  endMembership(accountId: string, memberId: string): number {
    return endAll(this.byMembership.get(`${accountId}|${memberId}`), membershipChanged);
  }

  /** Streams open on this replica. */
  get size(): number {
    let n = 0;
    for (const set of this.byKey.values()) n += set.size;
    return n;
  }
}

function add(map: Map<string, Set<Held>>, key: string): [Map<string, Set<Held>>, string, Set<Held>] {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  return [map, key, set];
}

function endAll(set: Set<Held> | undefined, why: () => DomainError): number {
  if (!set) return 0;
  const all = [...set];
  for (const held of all) {
    held.release();
    held.end(why());
  }
  return all.length;
}
