/**
 * SQL of sites' custom domains (migrations 0006_site_domains, 0007_site_domain_checks). Rules live in
 * domains.ts, domain-rules.ts and domain-checks.ts.
 */
import type { Queryable } from '@svc/kit';

import type { Actor } from '../items/store.js';

export interface DomainRow {
  domain: string;
  account_id: string;
  site_id: string;
  token: string;
  verified_at: Date | null;
  last_checked_at: Date | null;
  last_check_error: string | null;
  /** While verified: when a re-check first found the record gone (null while it is found). */
  missing_since: Date | null;
  created_at: Date;
  created_by: Actor;
}

const COLUMNS = `domain, account_id, site_id, token, verified_at, last_checked_at, last_check_error, missing_since, created_at, created_by`;
/** A number of milliseconds ($n) as an SQL interval. */
const ms = (n: number) => `($${n}::float8 * interval '1 millisecond')`;
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

  /** Records a verification's check: verified now (`ok`, re-checked `recheckMs` later), or why not. */
  async checked(q: Queryable, accountId: string, domain: string, ok: boolean, error: string | null, recheckMs: number): Promise<DomainRow> {
    const rows = await q.query<DomainRow>(
      `UPDATE drive.site_domains
          SET last_checked_at = now(), last_check_error = $4,
              verified_at = CASE WHEN $3 THEN COALESCE(verified_at, now()) ELSE verified_at END,
              next_check_at = CASE WHEN $3 THEN now() + ${ms(5)} ELSE next_check_at END,
              missing_since = NULL
        WHERE account_id = $1 AND domain = $2 RETURNING ${COLUMNS}`,
      [accountId, domain, ok, error, recheckMs],
    );
    return row(rows[0]!);
  }

  /**
   * Claims verified domains due for a re-check, at most `limit`, by moving their next check
   * `recheckMs` on, in one statement: its row locks (SKIP LOCKED) keep another replica's sweep off
   * them until it commits, and the new next_check_at keeps them off after. A row without one (one
   * verified by a replica that predates re-checks, during an upgrade) is due.
   */
  async claimDue(q: Queryable, limit: number, recheckMs: number): Promise<DomainRow[]> {
    const rows = await q.query<DomainRow>(
      `UPDATE drive.site_domains SET next_check_at = now() + ${ms(2)}
        WHERE (account_id, domain) IN (
          SELECT account_id, domain FROM drive.site_domains
           WHERE verified_at IS NOT NULL AND (next_check_at IS NULL OR next_check_at <= now())
           ORDER BY next_check_at NULLS FIRST LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [limit, recheckMs],
    );
    return rows.map(row);
  }

  /**
   * A claim locked to write a re-check's result, with the database's clock (the one its times are
   * on). Null too when another transaction holds it (a verification or removal writing it): the
   * sweep never waits on a row, and the domain is looked up again at its next time.
   */
  async lockForRecheck(q: Queryable, accountId: string, domain: string): Promise<(DomainRow & { now: Date }) | null> {
    const rows = await q.query<DomainRow & { now: Date }>(
      `SELECT ${COLUMNS}, now() AS now FROM drive.site_domains WHERE account_id = $1 AND domain = $2 FOR UPDATE SKIP LOCKED`,
      [accountId, domain],
    );
    return rows[0] ? { ...row(rows[0]), now: new Date(rows[0].now) } : null;
  }

  /**
   * Records a re-check of a verified domain: the record missing since `missingSince` (null: found),
   * and, when `lapsed`, the domain pending again (no longer served, its name free; its pending
   * claim's age counts from now).
   */
  async rechecked(
    q: Queryable,
    accountId: string,
    domain: string,
    r: { error: string | null; missingSince: Date | null; lapsed: boolean },
  ): Promise<DomainRow> {
    const rows = await q.query<DomainRow>(
      `UPDATE drive.site_domains
          SET last_checked_at = now(), last_check_error = $3,
              missing_since = CASE WHEN $5 THEN NULL ELSE $4::timestamptz END,
              verified_at = CASE WHEN $5 THEN NULL ELSE verified_at END,
              unverified_at = CASE WHEN $5 THEN now() ELSE unverified_at END,
              next_check_at = CASE WHEN $5 THEN NULL ELSE next_check_at END
        WHERE account_id = $1 AND domain = $2 RETURNING ${COLUMNS}`,
      [accountId, domain, r.error, r.missingSince, r.lapsed],
    );
    return row(rows[0]!);
  }

  /**
   * Deletes pending claims older than `ttlMs` (counted from their creation, or from when a re-check
   * made them pending), at most `limit`, skipping those another transaction holds (a verification
   * writing its result). What was deleted.
   */
  async expirePending(q: Queryable, limit: number, ttlMs: number): Promise<DomainRow[]> {
    const rows = await q.query<DomainRow>(
      `DELETE FROM drive.site_domains
        WHERE (account_id, domain) IN (
          SELECT account_id, domain FROM drive.site_domains
           WHERE verified_at IS NULL AND COALESCE(unverified_at, created_at) <= now() - ${ms(2)}
           ORDER BY COALESCE(unverified_at, created_at) LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [limit, ttlMs],
    );
    return rows.map(row);
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
