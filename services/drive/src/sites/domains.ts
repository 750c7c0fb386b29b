/**
 * Custom domains of a site (docs/sites.md, "Custom domains"): added `pending` with a token of its
 * own, verified by a DNS TXT record `_svc-challenge.<domain>` carrying that token, then served at
 * the site's root by the gateway. A claim belongs to an account: another account's pending claim of
 * the same name is invisible and blocks nothing (so a claim reserves nothing and tells nothing);
 * one verified claim at most serves a name, and a name another account serves is 409 domain_taken,
 * without saying whose. A verified domain is looked up again periodically, and pending claims
 * expire (domain-checks.ts).
 */
import { DomainError, type Principal } from '@svc/kit';

import { actorOf, writer } from '../items/domain.js';
import type { DomainSettings } from '../settings.js';
import type { TxtLookup } from './dns.js';
import { challengeOf, lapsedError, newDomainToken, readChallenge, recheckVerdict, validDomain } from './domain-rules.js';
import type { DomainRow, DomainsStore } from './domains-store.js';
import type { Sites } from './sites.js';

export type { DomainRow } from './domains-store.js';

export const domainNotFound = () => new DomainError('not_found', 'domain_not_found', 'The site has no such domain.');
const domainTaken = () => new DomainError('conflict', 'domain_taken', 'This domain is served by another site; it cannot be added.');

export class Domains {
  readonly store: DomainsStore;

  constructor(
    readonly sites: Sites,
    readonly settings: DomainSettings,
    readonly lookupTxt: TxtLookup,
  ) {
    this.store = sites.domainsStore;
  }

  /** A domain as stored; `reserved` (adding one) also refuses the platform's own names. */
  valid(raw: string, reserved = false): string {
    return validDomain(raw, reserved ? this.settings.reservedHosts : []);
  }
}

/** What the API shows of a domain. */
export function domainView(d: DomainRow) {
  const txt = challengeOf(d.domain, d.token);
  return {
    domain: d.domain,
    siteId: d.site_id,
    status: d.verified_at ? ('verified' as const) : ('pending' as const),
    txtName: txt.name,
    txtValue: txt.value,
    verifiedAt: d.verified_at,
    lastCheckedAt: d.last_checked_at,
    lastCheckError: d.last_check_error,
    missingSince: d.missing_since,
    createdAt: d.created_at,
    createdBy: d.created_by,
  };
}

/** The caller's claim of a domain on a site it sees, else not found (the claim of another of its sites too). */
async function claimOn(domains: Domains, p: Principal, siteId: string, raw: string) {
  const domain = domains.valid(raw);
  const q = domains.sites.drive.sql;
  const site = await domains.sites.visible(q, p, siteId);
  const claim = await domains.store.claim(q, p.accountId, domain);
  if (!claim || claim.site_id !== site.id) throw domainNotFound();
  return { site, claim };
}

/**
 * Adds a domain to a site, pending until verified. The same name on this site already: answered
 * as it is (created: false); on another site of the account: 409 domain_exists (not naming it: a
 * project's key does not see the account's other projects); served by another
 * account's site: 409 domain_taken. At most SVC_DRIVE_SITE_MAX_DOMAINS per site.
 */
export async function addDomain(
  domains: Domains,
  p: Principal,
  req: { siteId: string; domain: string },
): Promise<{ row: DomainRow; created: boolean }> {
  writer(p);
  const domain = domains.valid(req.domain, true);
  const { sites } = domains;
  return sites.drive.tx(
    async (q) => {
      const site = await sites.visible(q, p, req.siteId, true);
      const mine = await domains.store.claim(q, p.accountId, domain);
      if (mine) {
        if (mine.site_id === site.id) return { row: mine, created: false };
        throw new DomainError('conflict', 'domain_exists', 'Another site of this account has this domain; remove it there first.');
      }
      const served = await domains.store.servedBy(q, domain);
      if (served) throw domainTaken();
      if ((await domains.store.count(q, site.id)) >= domains.settings.maxDomains) {
        throw new DomainError('invalid_argument', 'too_many_domains', `A site has at most ${domains.settings.maxDomains} domains.`);
      }
      const row = await domains.store.insert(q, {
        domain,
        account_id: p.accountId,
        site_id: site.id,
        token: newDomainToken(),
        created_by: actorOf(p),
      });
      await sites.emit(q, 'drive.site.domain_added', site, { domain });
      return { row, created: true };
    },
    {
      // Two adds of one name at once: the loser is told as a later add would be.
      onUnique: async () => {
        throw new DomainError('conflict', 'changed_concurrently', 'The domain was added at the same time; try again.');
      },
    },
  );
}

export async function listDomains(domains: Domains, p: Principal, siteId: string): Promise<DomainRow[]> {
  const site = await domains.sites.visible(domains.sites.drive.sql, p, siteId);
  return domains.store.ofSite(domains.sites.drive.sql, site.id);
}

/**
 * Checks the domain's TXT record and, when one carries the token, verifies it: it is served from
 * then on. A check that finds no such record answers the domain still pending with the reason
 * (a DNS change takes time to show; call again). Verified already: re-checked as the sweep does
 * (found, an earlier absence is forgotten; absent, the grace period starts or, once it is over,
 * the domain is pending again; a failed lookup changes nothing) and answered as it then is.
 */
export async function verifyDomain(domains: Domains, p: Principal, req: { siteId: string; domain: string }): Promise<DomainRow> {
  writer(p);
  const { claim } = await claimOn(domains, p, req.siteId, req.domain);
  if (claim.verified_at) {
    await recheckDomain(domains, claim);
    const now = await domains.store.claim(domains.sites.drive.sql, p.accountId, claim.domain);
    if (!now || now.site_id !== claim.site_id) throw domainNotFound();
    return now;
  }
  const txt = challengeOf(claim.domain, claim.token);
  const { outcome, error } = readChallenge(await domains.lookupTxt(txt.name), txt);
  const ok = outcome === 'found';
  const { sites } = domains;
  return sites.drive.tx(
    async (q) => {
      const site = await sites.visible(q, p, req.siteId, true);
      const now = await domains.store.claim(q, p.accountId, claim.domain, { lock: true });
      if (!now || now.site_id !== site.id) throw domainNotFound();
      if (now.verified_at) return now;
      // Another account verified it first: its site serves the name.
      if (ok && (await domains.store.servedBy(q, claim.domain))) throw domainTaken();
      const row = await domains.store.checked(q, p.accountId, claim.domain, ok, error, domains.settings.recheckMs);
      if (ok) await sites.emit(q, 'drive.site.domain_verified', site, { domain: row.domain });
      return row;
    },
    { onUnique: async () => Promise.reject(domainTaken()) },
  );
}

/**
 * Looks a verified domain's record up again and writes what that means (the sweep's re-check, and a
 * verify of a verified domain); whether the domain went back to pending.
 */
export async function recheckDomain(domains: Domains, claimed: DomainRow): Promise<boolean> {
  const challenge = challengeOf(claimed.domain, claimed.token);
  const { outcome, error } = readChallenge(await domains.lookupTxt(challenge.name), challenge);
  const { sites, store, settings } = domains;
  return sites.drive.tx(async (q) => {
    const now = await store.lockForRecheck(q, claimed.account_id, claimed.domain);
    // Removed during the lookup (perhaps added again, with another token), pending already, or being
    // written by another transaction: the answer is about a claim that is no more, or waits for the next check.
    if (!now?.verified_at || now.token !== claimed.token) return false;
    const verdict = recheckVerdict(outcome, now.missing_since, now.now, settings.graceMs);
    await store.rechecked(q, now.account_id, now.domain, {
      ...verdict,
      error: verdict.lapsed ? lapsedError(challenge, verdict.missingSince ?? now.now) : error,
    });
    if (!verdict.lapsed) return false;
    // Every gateway replica drops what it kept of the name (it listens to drive.site.* events
    // naming a domain); the drive already answers "no site" for it from this commit on.
    const site = await sites.store.siteById(q, now.account_id, now.site_id);
    if (site) {
      await sites.emit(q, 'drive.site.domain_unverified', site, { domain: now.domain, missingSince: verdict.missingSince?.toISOString() ?? null });
    }
    return true;
  });
}

/** Removes a domain from a site: it stops being served at once. Not there: done. */
export async function removeDomain(domains: Domains, p: Principal, req: { siteId: string; domain: string }): Promise<void> {
  writer(p);
  const domain = domains.valid(req.domain);
  const { sites } = domains;
  await sites.drive.tx(async (q) => {
    const site = await sites.visible(q, p, req.siteId, true);
    const claim = await domains.store.claim(q, p.accountId, domain, { lock: true });
    if (!claim || claim.site_id !== site.id) return;
    await domains.store.remove(q, p.accountId, domain);
    await sites.emit(q, 'drive.site.domain_removed', site, { domain, wasVerified: !!claim.verified_at });
  });
}

/** Whether a host name is a verified domain of some site (the gateway's question, platform only). */
export async function domainServed(domains: Domains, host: string): Promise<boolean> {
  const domain = host.toLowerCase().replace(/\.$/, '');
  if (domain.length > 253) return false;
  return !!(await domains.store.servedBy(domains.sites.drive.sql, domain));
}
