/** SQL of sites' custom domains (migration 0006_site_domains). Rules live in domains.ts. */
import type { Queryable } from '@svc/kit';

import type { Actor } from '../store.js';

export interface DomainRow {
  domain: string;
  account_id: string;
  site_id: string;
  token: string;
  verified_at: Date | null;
  last_checked_at: Date | null;
  last_check_error: string | null;
  created_at: Date;
  created_by: Actor;
}

const COLUMNS = `domain, account_id, site_id, token, verified_at, last_checked_at, last_check_error, created_at, created_by`;
const row = (r: DomainRow): DomainRow => ({
  ...r,
  created_by: typeof r.created_by === 'string' ? (JSON.parse(r.created_by) as Actor) : r.created_by,
});

export class DomainsStore {
  /** The account's claim of a domain, whichever of its sites holds it. */
  async claim(q: Queryable, accountId: string, domain: string, opts: { lock?: boolean } = {}): Promise<DomainRow | null> {
    const rows = await q.query<DomainRow>(
      `SELECT ${COLUMNS} FROM drive.site_domains WHERE account_id = $1 AND domain = $2${opts.lock ? ' FOR UPDATE' : ''}`,
      [accountId, domain],
    );
    return rows[0] ? row(rows[0]) : null;
  }

  async insert(q: Queryable, r: Pick<DomainRow, 'domain' | 'account_id' | 'site_id' | 'token' | 'created_by'>): Promise<DomainRow> {
    const rows = await q.query<DomainRow>(
      `INSERT INTO drive.site_domains (domain, account_id, site_id, token, created_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [r.domain, r.account_id, r.site_id, r.token, JSON.stringify(r.created_by)],
    );
    return row(rows[0]!);
  }

  async ofSite(q: Queryable, siteId: string): Promise<DomainRow[]> {
    const rows = await q.query<DomainRow>(`SELECT ${COLUMNS} FROM drive.site_domains WHERE site_id = $1 ORDER BY domain`, [siteId]);
    return rows.map(row);
  }

  async count(q: Queryable, siteId: string): Promise<number> {
    const rows = await q.query<{ n: string }>(`SELECT count(*) AS n FROM drive.site_domains WHERE site_id = $1`, [siteId]);
    return Number(rows[0]!.n);
  }

  /** The verified claim that serves the domain, if any (whichever account's). */
  async servedBy(q: Queryable, domain: string): Promise<{ account_id: string; site_id: string } | null> {
    const rows = await q.query<{ account_id: string; site_id: string }>(
      `SELECT account_id, site_id FROM drive.site_domains WHERE domain = $1 AND verified_at IS NOT NULL`,
      [domain],
    );
    return rows[0] ?? null;
  }

  /** Records a check: verified now (`ok`), or why not. */
  async checked(q: Queryable, accountId: string, domain: string, ok: boolean, error: string | null): Promise<DomainRow> {
    const rows = await q.query<DomainRow>(
      `UPDATE drive.site_domains
          SET last_checked_at = now(), last_check_error = $4,
              verified_at = CASE WHEN $3 THEN COALESCE(verified_at, now()) ELSE verified_at END
        WHERE account_id = $1 AND domain = $2 RETURNING ${COLUMNS}`,
      [accountId, domain, ok, error],
    );
    return row(rows[0]!);
  }

  async remove(q: Queryable, accountId: string, domain: string): Promise<void> {
    await q.query(`DELETE FROM drive.site_domains WHERE account_id = $1 AND domain = $2`, [accountId, domain]);
  }

  /** The verified domains of a site (what its deletion stops serving). */
  async servedOfSite(q: Queryable, siteId: string): Promise<string[]> {
    const rows = await q.query<{ domain: string }>(`SELECT domain FROM drive.site_domains WHERE site_id = $1 AND verified_at IS NOT NULL`, [siteId]);
    return rows.map((r) => r.domain);
  }
}
