/**
 * Which host names are verified custom domains of sites (docs/sites.md, "Custom domains"), asked
 * of the drive once per name and kept: every request whose Host is neither the API's nor under
 * SVC_SITES_HOST asks, so the answer must cost nothing the second time. The drive's events
 * (`drive.site.domain_verified`, `domain_unverified` when a re-check found its record gone,
 * `domain_removed`, `deleted`, heard by every replica) drop a name's answer; the time limits bound
 * what a lost event could leave. What is served is still
 * decided by the drive on every request (by domain, verified only), so a stale "served" costs one
 * call that answers "no site" and drops the entry: a removal stops serving at once.
 */
export class SiteDomainCache {
  private readonly entries = new Map<string, { served: boolean; until: number }>();
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(
    /** Names kept at most (the oldest go first). */
    private readonly max = 10_000,
    /** How long a "served" answer is kept. */
    private readonly servedMs = 5 * 60_000,
    /** How long a "not a domain of ours" answer is kept (a newly verified name's event normally comes first). */
    private readonly unknownMs = 60_000,
  ) {}

  /** The kept answer, if any. */
  peek(host: string): boolean | undefined {
    const hit = this.entries.get(host);
    if (!hit) return undefined;
    if (hit.until > Date.now()) return hit.served;
    this.entries.delete(host);
    return undefined;
  }

  /** The answer, asked with `ask` on a miss (one question per name at a time). */
  served(host: string, ask: (host: string) => Promise<boolean>): Promise<boolean> {
    const hit = this.peek(host);
    if (hit !== undefined) return Promise.resolve(hit);
    const pending = this.asking.get(host);
    if (pending) return pending;
    const question = ask(host).then(
      (served) => {
        // Dropped while asked (an event came): the answer may predate the change, so it is not kept.
        if (this.asking.get(host) === question) {
          this.asking.delete(host);
          this.keep(host, served);
        }
        return served;
      },
      (err: unknown) => {
        if (this.asking.get(host) === question) this.asking.delete(host);
        throw err;
      },
    );
    this.asking.set(host, question);
    return question;
  }

  private keep(host: string, served: boolean): void {
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(host, { served, until: Date.now() + (served ? this.servedMs : this.unknownMs) });
  }

  /** Drops what is known of a name (its domain changed). */
  forget(host: string): void {
    const name = host.toLowerCase().replace(/\.$/, '');
    this.entries.delete(name);
    this.asking.delete(name);
  }

  get size(): number {
    return this.entries.size;
  }
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Ends in a label of digits (an IPv4 address among them), or holds a colon (IPv6). */
const IP_LIKE = /(?:\.\d+\.?$)|:/;

/**
 * A request's host name when it could be a custom domain: at least two labels of letters, digits
 * and "-", the last not all digits (an IP address never is one), at most 253 characters.
 */
export function domainCandidate(hostname: string | undefined): string | undefined {
  // An IP address (the commonest Host of all: a client of the API on its address) at once.
  if (!hostname || IP_LIKE.test(hostname)) return undefined;
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host.length > 253 || !host.includes('.')) return undefined;
  const labels = host.split('.');
  if (!labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels[labels.length - 1]!)) return undefined;
  return host;
}
