import type { Log } from './log.js';

/** A standing grant the host holds, as GET /standing-grants/held shows it. */
export interface HeldGrant {
  id: string;
  accountId: string;
  granteeId: string;
  verbs: string[];
  scope: string;
  expiresAt: string | null;
}

/** A granted verb pattern (`units.arm`, `units.*`, `*`) covers a verb (the accounts service's rule). */
export function verbCovers(pattern: string, verb: string): boolean {
  if (pattern === '*' || pattern === verb) return true;
  return (pattern.endsWith('.*') || pattern.endsWith(':*')) && verb.startsWith(pattern.slice(0, -1));
}

/**
 * Does a grant's scope reach this unit of this host? `account` (and `*`) reach every unit of the
 * account's hosts, `host:<hostId>` every unit of that host, `host:<hostId>/<unit>` one unit.
 */
export function scopeReaches(scope: string, hostId: string, unit: string | undefined): boolean {
  if (scope === 'account' || scope === '*') return true;
  const host = `host:${hostId}`;
  if (scope === host) return true;
  return unit !== undefined && scope === `${host}/${unit}`;
}

export interface GrantBookOptions {
  baseUrl: string;
  credential: string;
  log: Log;
  /** How often grants are fetched again without being told (default 60 s); a push from the connection refreshes at once. */
  pollMs?: number;
}

/**
 * The grants this host holds, fetched from the platform with the host credential: at start, on
 * every `grants_changed` the connection pushes, and every pollMs. The last answer is kept while the
 * platform cannot be reached (expired grants drop out on their own).
 */
export class GrantBook {
  private grants: HeldGrant[] = [];
  private loadedAt: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  private again = false;
  /** The platform refused the credential (unpaired): nothing is granted. */
  rejected = false;

  constructor(private readonly o: GrantBookOptions) {}

  start(): void {
    this.refresh().catch(() => {});
    this.timer = setInterval(() => this.refresh().catch(() => {}), this.o.pollMs ?? 60_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Fetches the grants again (a refresh asked for during a fetch runs once more after it). */
  refresh(): Promise<void> {
    if (this.inflight) {
      this.again = true;
      return this.inflight;
    }
    this.inflight = this.fetchAll()
      .catch((err: Error) => this.o.log.warn('grants: fetch failed', { error: err.message }))
      .finally(() => {
        this.inflight = undefined;
        if (this.again) {
          this.again = false;
          this.refresh().catch(() => {});
        }
      });
    return this.inflight;
  }

  private async fetchAll(): Promise<void> {
    const out: HeldGrant[] = [];
    let cursor: string | null = null;
    do {
      const url = new URL('/v1/standing-grants/held', this.o.baseUrl);
      url.searchParams.set('limit', '200');
      if (cursor) url.searchParams.set('cursor', cursor);
      const res = await fetch(url, { headers: { authorization: `Bearer ${this.o.credential}` }, signal: AbortSignal.timeout(10_000) });
      if (res.status === 401) {
        this.rejected = true;
        this.grants = [];
        this.loadedAt = Date.now();
        this.o.log.warn('grants: the platform refused the host credential (unpaired?)');
        return;
      }
      if (!res.ok) throw new Error(`GET /standing-grants/held answered ${res.status}`);
      const body = (await res.json()) as { grants: HeldGrant[]; nextCursor: string | null };
      out.push(...body.grants);
      cursor = body.nextCursor;
    } while (cursor);
    this.rejected = false;
    this.grants = out;
    this.loadedAt = Date.now();
    this.o.log.info('grants: loaded', { count: out.length });
  }

  /** Live grants (not expired), as last fetched; `null` before the first answer. */
  held(): HeldGrant[] | null {
    if (this.loadedAt === null) return null;
    const now = Date.now();
    return this.grants.filter((g) => g.expiresAt === null || Date.parse(g.expiresAt) > now);
  }

  loaded(): boolean {
    return this.loadedAt !== null;
  }

  /** The first live grant giving `verb` (any verb when `verb` is `*any*`) on the unit. */
  find(verb: string | { any: true }, unit?: string): HeldGrant | undefined {
    return (this.held() ?? []).find(
      (g) => scopeReaches(g.scope, g.granteeId, unit) && (typeof verb !== 'string' || g.verbs.some((v) => verbCovers(v, verb))),
    );
  }
}
