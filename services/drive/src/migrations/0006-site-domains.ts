import type { Migration } from '@svc/kit';

/**
 * Custom domains of sites (docs/sites.md, "Custom domains"). A claim is per account: several
 * accounts may each hold a pending claim of a name (so that a pending claim reserves nothing and
 * tells nobody anything), but one verified claim at most serves it (the partial unique index).
 */
export const siteDomains: Migration = {
  id: '0006_site_domains',
  sql: `
    CREATE TABLE drive.site_domains (
      domain text COLLATE "C" NOT NULL,
      account_id text NOT NULL,
      site_id text NOT NULL REFERENCES drive.sites (id) ON DELETE CASCADE,
      token text NOT NULL,
      verified_at timestamptz,
      last_checked_at timestamptz,
      last_check_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      created_by jsonb NOT NULL,
      PRIMARY KEY (account_id, domain)
    );
    CREATE UNIQUE INDEX site_domains_served ON drive.site_domains (domain) WHERE verified_at IS NOT NULL;
    CREATE INDEX site_domains_site ON drive.site_domains (site_id);`,
};
