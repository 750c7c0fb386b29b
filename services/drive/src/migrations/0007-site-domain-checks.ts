import type { Migration } from '@svc/kit';

/**
 * Re-checking verified custom domains and expiring pending claims (docs/sites.md, "Re-checks").
 * - next_check_at: when a verified domain is next re-checked. A sweep claims due rows by moving it
 *   one interval on (FOR UPDATE SKIP LOCKED, in one statement), so that of several drive replicas
 *   one only looks a domain up; a replica that dies mid-check leaves it due again an interval later.
 *   Verified rows from before this migration are due at once.
 * - missing_since: when a re-check first found the TXT record gone (NULL while it is found, and
 *   after a failed lookup, which proves nothing either way); past the grace period the domain
 *   goes back to pending.
 * - unverified_at: when a re-check put the domain back to pending; a pending claim's age, for its
 *   expiry, counts from then (else from created_at), so that a long-verified domain that lapses is
 *   not deleted at once.
 */
export const siteDomainChecks: Migration = {
  id: '0007_site_domain_checks',
  sql: `
    ALTER TABLE drive.site_domains ADD COLUMN next_check_at timestamptz;
    ALTER TABLE drive.site_domains ADD COLUMN missing_since timestamptz;
    ALTER TABLE drive.site_domains ADD COLUMN unverified_at timestamptz;
    UPDATE drive.site_domains SET next_check_at = now() WHERE verified_at IS NOT NULL;
    CREATE INDEX site_domains_due ON drive.site_domains (next_check_at) WHERE verified_at IS NOT NULL;
    CREATE INDEX site_domains_pending ON drive.site_domains ((COALESCE(unverified_at, created_at))) WHERE verified_at IS NULL;`,
};
