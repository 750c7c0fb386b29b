/**
 * The sweep of custom domains (docs/sites.md, "Re-checks"), on a timer in every drive replica:
 * - a verified domain's TXT record is looked up again every SVC_DRIVE_SITE_DOMAIN_RECHECK_MS, since
 *   a name changes hands and its records with it. One that is gone is still served for
 *   SVC_DRIVE_SITE_DOMAIN_GRACE_MS from the first lookup that found it gone (a DNS hiccup or a
 *   record being moved must not take a site off its name), then it is pending again: no longer
 *   served, and the name free for whoever proves control of it next;
 * - a pending claim older than SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS is deleted (a claim reserves
 *   nothing, but rows nobody will verify should not pile up).
 * Replicas share the work through the rows (domains-store.ts, claimDue): a domain is looked up by
 * one of them at a time, and the lookups happen outside any transaction, as a verification's do.
 */
import { eachAtMost } from '@svc/kit';

import { type Domains, recheckDomain } from './domains.js';

/** Lookups of one sweep in flight at once: a DNS server that times out costs the sweep a few timeouts, not one per domain. */
const LOOKUPS_AT_ONCE = 8;

/** How often the sweep runs: every minute, or as often as a shorter interval or TTL needs. */
export const sweepEveryMs = (s: { recheckMs: number; pendingTtlMs: number }) => Math.min(60_000, s.recheckMs, s.pendingTtlMs);

/** One sweep: expired pending claims deleted, due verified domains re-checked (at most SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH of each). */
export async function sweepDomains(domains: Domains, signal?: AbortSignal): Promise<{ expired: number; checked: number; unverified: number }> {
  const expired = await expirePending(domains);
  const due = await domains.store.claimDue(domains.sites.drive.sql, domains.settings.sweepBatch, domains.settings.recheckMs);
  let unverified = 0;
  await eachAtMost(LOOKUPS_AT_ONCE, due, async (row) => {
    // Stopping: the rest are looked up an interval later, by whichever replica is up then.
    if (signal?.aborted) return;
    try {
      if (await recheckDomain(domains, row)) unverified++;
    } catch (err) {
      // This domain is checked again at its next time; the others go on.
      domains.sites.drive.log.warn({ err, domain: row.domain }, 'custom domain re-check failed');
    }
  });
  return { expired, checked: due.length, unverified };
}

async function expirePending(domains: Domains): Promise<number> {
  const { sites, store, settings } = domains;
  return sites.drive.tx(async (q) => {
    const gone = await store.expirePending(q, settings.sweepBatch, settings.pendingTtlMs);
    for (const d of gone) {
      const site = await sites.store.siteById(q, d.account_id, d.site_id);
      if (site) await sites.emit(q, 'drive.site.domain_removed', site, { domain: d.domain, wasVerified: false, expired: true });
    }
    return gone.length;
  });
}

/** Runs the sweep on a timer, one at a time in this process (a slow DNS server must not pile sweeps up). */
export function startDomainChecks(domains: Domains): { stop(): Promise<void> } {
  const { log } = domains.sites.drive;
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = sweepDomains(domains, stopping.signal)
      .then(
        (r) => {
          if (r.expired || r.unverified) log.info(r, 'custom domains swept');
        },
        (err: unknown) => log.warn({ err }, 'custom domain sweep failed'),
      )
      .finally(() => (running = undefined));
  }, sweepEveryMs(domains.settings));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await running;
    },
  };
}
