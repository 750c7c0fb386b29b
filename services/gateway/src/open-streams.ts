import { DomainError } from '@svc/kit';

/** The longest delay setTimeout takes (about 24.8 days); a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * How long a revocation is remembered: longer than any request takes between its authentication
 * and the hold of what it opens (the services' deadlines are seconds), and than a verification.
 */
export const REVOCATION_MEMORY_MS = 10 * 60_000;
const MAX_REMEMBERED = 100_000;

export const keyRevoked = () => new DomainError('unauthenticated', 'key_revoked', 'The API key was revoked: this stream has ended.');
export const keyExpired = () => new DomainError('unauthenticated', 'key_expired', 'The API key has expired: this stream has ended.');
export const membershipChanged = () =>
  new DomainError(
    'forbidden',
    'membership_changed',
    'Your membership of this organization was removed or changed: this stream has ended (open it again to be checked anew).',
  );

export const draining = () =>
  new DomainError('unavailable', 'draining', 'This gateway replica is stopping: the stream resumes on another one (Last-Event-ID).');

/** The membership an organization's stream rests on: `memberId`'s in `accountId`. */
export interface Membership {
  accountId: string;
  memberId: string;
}

interface Held {
  end: (why: DomainError) => void;
  timer?: NodeJS.Timeout;
  released?: boolean;
  release: () => void;
}

/** What else a held stream rests on (OpenStreams.hold). */
export interface HoldOptions {
  /** A stream acting in an organization: ended when this membership is removed or changed. */
  membership?: Membership;
  /** An event stream its client resumes by itself: ended when the replica drains. */
  live?: boolean;
  /** When its request's credential was verified (ms): a revocation since then ends it at once. */
  authenticatedAt?: number;
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
  /** Live event streams (SSE), which a draining replica ends at once: their clients resume on another one. */
  private readonly live = new Set<Held>();
  private isDraining = false;
  /**
   * Keys revoked lately, with when (ms), oldest first: a stream of one whose request was
   * authenticated before that is ended as soon as it is held, though its revocation came while
   * the request was under way (between the authentication and the hold, nothing was held to end).
   */
  private readonly revoked = new Map<string, number>();

  /**
   * Registers one open stream of `keyId`: `end` is called once, with why, when the key is revoked,
   * reaches `expiresAt` (ms, null: never), or (for a stream acting in an organization) when
   * `membership` is removed or changed; at once when the key was revoked at or after
   * `authenticatedAt` (ms, when its request's credential was verified). Returns the release to call
   * when the stream ends on its own (idempotent). A `live` stream (an event stream a client resumes
   * by itself) also ends when the replica drains (`drain`), at once, or just after `hold` returns
   * once it is draining.
   */
  hold(keyId: string, expiresAt: number | null, end: (why: DomainError) => void, opts: HoldOptions = {}): () => void {
    const sets = [add(this.byKey, keyId)];
    if (opts.membership) sets.push(add(this.byMembership, `${opts.membership.accountId}|${opts.membership.memberId}`));
    if (opts.live) sets.push([undefined, '', this.live]);
    const held: Held = {
      end,
      release: () => {
        held.released = true;
        if (held.timer) clearTimeout(held.timer);
        for (const [map, key, set] of sets) {
          set.delete(held);
          if (map && !set.size && map.get(key) === set) map.delete(key);
        }
      },
    };
    for (const [, , set] of sets) set.add(held);
    // Revoked while its request was under way, or a live stream opened on a draining replica: it
    // ends just after `hold` returns (never before), unless released first.
    const now =
      opts.authenticatedAt !== undefined && this.revokedSince(keyId, opts.authenticatedAt)
        ? keyRevoked
        : opts.live && this.isDraining
          ? draining
          : undefined;
    if (now) {
      setImmediate(() => {
        if (held.released) return;
        held.release();
        end(now());
      });
    } else if (expiresAt !== null) {
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

  /**
   * The replica is stopping (SIGTERM): ends every live event stream now, and each one opened from
   * now on as soon as it starts, rather than holding them until the grace period cuts them; their
   * clients reconnect (to another replica: this one no longer accepts) and resume after their last
   * event. Returns how many it ended.
   */
  drain(): number {
    this.isDraining = true;
    return endAll(new Set(this.live), draining);
  }

  /** Ends every open stream of a revoked key, and remembers the revocation a while; returns how many there were. */
  end(keyId: string, now = Date.now()): number {
    this.revoked.delete(keyId);
    this.revoked.set(keyId, now);
    for (const [k, at] of this.revoked) {
      if (at > now - REVOCATION_MEMORY_MS && this.revoked.size <= MAX_REMEMBERED) break;
      this.revoked.delete(k);
    }
    return endAll(this.byKey.get(keyId), keyRevoked);
  }

  /** Whether `keyId` was revoked at or after `at` (ms), as far as this replica remembers (REVOCATION_MEMORY_MS). */
  revokedSince(keyId: string, at: number): boolean {
    const when = this.revoked.get(keyId);
    return when !== undefined && when >= at;
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

function add(map: Map<string, Set<Held>>, key: string): [Map<string, Set<Held>> | undefined, string, Set<Held>] {
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
