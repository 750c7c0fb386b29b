import type { Actor, Queryable, Sql } from '@svc/kit';

export type { Actor };

export const SCHEMA = 'accounts';

export type Role = 'owner' | 'admin' | 'member';

export interface AccountRow {
  id: string;
  kind: 'user' | 'organization';
  name: string;
  email: string | null;
  is_operator: boolean;
  created_at: Date;
}

export interface MemberRow extends AccountRow {
  role: Role;
  added_at: Date;
}

export interface SettingsRow {
  account_id: string;
  document: Record<string, unknown>;
  etag: string;
  updated_at: Date;
}

export interface GrantRow {
  id: string;
  account_id: string;
  grantee_kind: 'agent' | 'host' | 'account';
  grantee_id: string;
  verbs: string[];
  scope: string;
  expires_at: Date | null;
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
  revoked_at: Date | null;
}

export interface SigningKeyRow {
  id: string;
  account_id: string;
  public_jwk: Record<string, unknown>;
  private_key_enc: string;
  created_at: Date;
  retired_at: Date | null;
  verify_until: Date | null;
}

export interface HostRow {
  id: string;
  account_id: string;
  name: string;
  credential_hash: string;
  credential_prefix: string;
  paired_by: Actor;
  created_at: Date;
  last_seen_at: Date | null;
  unpaired_at: Date | null;
}

/** An agent as the agents service holds it, at a version (SyncAgents). */
export interface AgentRecordRow {
  id: string;
  owner_account_id: string;
  name: string;
  version: number;
  deleted: boolean;
}

export interface AuditRow {
  id: string;
  account_id: string;
  action: string;
  actor: Actor;
  target_kind: string | null;
  target_id: string | null;
  data: Record<string, unknown>;
  occurred_at: Date;
}

const ACCOUNT_COLUMNS = 'id, kind, name, email, is_operator, created_at';
const GRANT_COLUMNS = `id, account_id, grantee_kind, grantee_id, verbs, scope, expires_at, created_by, created_at,
  updated_at, revoked_at`;
const KEY_COLUMNS = 'id, account_id, public_jwk, private_key_enc, created_at, retired_at, verify_until';
const HOST_COLUMNS = `id, account_id, name, credential_hash, credential_prefix, paired_by, created_at, last_seen_at,
  unpaired_at`;

/** jsonb comes back parsed from pg and PGlite alike; this keeps both paths honest. */
function json<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}
const grantRow = (r: GrantRow): GrantRow => ({ ...r, created_by: json(r.created_by), verbs: [...r.verbs] });
const hostRow = (r: HostRow): HostRow => ({ ...r, paired_by: json(r.paired_by) });
const keyRow = (r: SigningKeyRow): SigningKeyRow => ({ ...r, public_jwk: json(r.public_jwk) });
const auditRow = (r: AuditRow): AuditRow => ({ ...r, actor: json(r.actor), data: json(r.data) });

/** SQL for accounts and everything they own. Rules live in accounts/ (one file per area). */
export class AccountStore {
  constructor(readonly sql: Sql) {}

  // Accounts -----------------------------------------------------------------------------------

  async count(): Promise<number> {
    const rows = await this.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM accounts.accounts`);
    return rows[0]!.n;
  }

  /** Creates the operator account, only while the store has no accounts at all. */
  async insertOperatorIfEmpty(id: string): Promise<void> {
    await this.sql.query(
      `INSERT INTO accounts.accounts (id, kind, name, is_operator)
       SELECT $1, 'user', 'operator', true
        WHERE NOT EXISTS (SELECT 1 FROM accounts.accounts)
       ON CONFLICT (id) DO NOTHING`,
      [id],
    );
  }

  async byId(id: string, q: Queryable = this.sql): Promise<AccountRow | null> {
    const rows = await q.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts.accounts WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  async byEmail(email: string): Promise<AccountRow | null> {
    const rows = await this.sql.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts.accounts WHERE lower(email) = lower($1)`, [email]);
    return rows[0] ?? null;
  }

  async insertAccount(
    q: Queryable,
    a: { id: string; kind: 'user' | 'organization'; name: string; email: string | null; createdBy: Actor },
  ): Promise<AccountRow> {
    const rows = await q.query<AccountRow>(
      `INSERT INTO accounts.accounts (id, kind, name, email, created_by) VALUES ($1, $2, $3, $4, $5::jsonb)
       RETURNING ${ACCOUNT_COLUMNS}`,
      [a.id, a.kind, a.name, a.email, JSON.stringify(a.createdBy)],
    );
    return rows[0]!;
  }

  /**
   * Whether two accounts share an organization: one is an organization the other is a member of,
   * or both are members of the same one.
   */
  async sharesOrganization(a: string, b: string): Promise<boolean> {
    const rows = await this.sql.query<{ ok: number }>(
      `SELECT 1 AS ok FROM accounts.memberships WHERE (org_id = $1 AND member_id = $2) OR (org_id = $2 AND member_id = $1)
       UNION ALL
       SELECT 1 FROM accounts.memberships x JOIN accounts.memberships y ON y.org_id = x.org_id WHERE x.member_id = $1 AND y.member_id = $2
       LIMIT 1`,
      [a, b],
    );
    return rows.length > 0;
  }

  async membership(orgId: string, memberId: string, q: Queryable = this.sql): Promise<Role | null> {
    const rows = await q.query<{ role: Role }>(`SELECT role FROM accounts.memberships WHERE org_id = $1 AND member_id = $2`, [orgId, memberId]);
    return rows[0]?.role ?? null;
  }

  async organizationsOf(memberId: string): Promise<MemberRow[]> {
    return this.sql.query(
      `SELECT a.id, a.kind, a.name, a.email, a.is_operator, a.created_at, m.role, m.created_at AS added_at
         FROM accounts.memberships m JOIN accounts.accounts a ON a.id = m.org_id
        WHERE m.member_id = $1 ORDER BY a.id`,
      [memberId],
    );
  }

  // Members ------------------------------------------------------------------------------------

  async members(orgId: string, after: string | undefined, limit: number): Promise<MemberRow[]> {
    return this.sql.query(
      `SELECT a.id, a.kind, a.name, a.email, a.is_operator, a.created_at, m.role, m.created_at AS added_at
         FROM accounts.memberships m JOIN accounts.accounts a ON a.id = m.member_id
        WHERE m.org_id = $1 AND ($2::text IS NULL OR m.member_id > $2)
        ORDER BY m.member_id LIMIT $3`,
      [orgId, after ?? null, limit],
    );
  }

  /** The membership row, locked for the rest of the transaction. */
  async lockMembership(q: Queryable, orgId: string, memberId: string): Promise<{ role: Role; created_at: Date } | null> {
    const rows = await q.query<{ role: Role; created_at: Date }>(
      `SELECT role, created_at FROM accounts.memberships WHERE org_id = $1 AND member_id = $2 FOR UPDATE`,
      [orgId, memberId],
    );
    return rows[0] ?? null;
  }

  /** Serializes membership changes of one organization (the last-owner rule needs it). */
  async lockOrganization(q: Queryable, orgId: string): Promise<void> {
    await q.query(`SELECT id FROM accounts.accounts WHERE id = $1 FOR UPDATE`, [orgId]);
  }

  async ownerCount(q: Queryable, orgId: string): Promise<number> {
    const rows = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM accounts.memberships WHERE org_id = $1 AND role = 'owner'`, [orgId]);
    return rows[0]!.n;
  }

  async upsertMembership(q: Queryable, orgId: string, memberId: string, role: Role, by: Actor): Promise<Date> {
    const rows = await q.query<{ created_at: Date }>(
      `INSERT INTO accounts.memberships (org_id, member_id, role, added_by) VALUES ($1, $2, $3, $4::jsonb)
       ON CONFLICT (org_id, member_id) DO UPDATE SET role = EXCLUDED.role
       RETURNING created_at`,
      [orgId, memberId, role, JSON.stringify(by)],
    );
    return rows[0]!.created_at;
  }

  async deleteMembership(q: Queryable, orgId: string, memberId: string): Promise<void> {
    await q.query(`DELETE FROM accounts.memberships WHERE org_id = $1 AND member_id = $2`, [orgId, memberId]);
  }

  // Settings -----------------------------------------------------------------------------------

  async settings(accountId: string, q: Queryable = this.sql, lock = false): Promise<SettingsRow | null> {
    const rows = await q.query<SettingsRow>(
      `SELECT account_id, document, etag, updated_at FROM accounts.settings WHERE account_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [accountId],
    );
    const r = rows[0];
    return r ? { ...r, document: json(r.document) } : null;
  }

  async putSettings(q: Queryable, accountId: string, document: unknown, etag: string, by: Actor): Promise<SettingsRow> {
    const rows = await q.query<SettingsRow>(
      `INSERT INTO accounts.settings (account_id, document, etag, updated_by) VALUES ($1, $2::jsonb, $3, $4::jsonb)
       ON CONFLICT (account_id) DO UPDATE
         SET document = EXCLUDED.document, etag = EXCLUDED.etag, updated_by = EXCLUDED.updated_by, updated_at = now()
       RETURNING account_id, document, etag, updated_at`,
      [accountId, JSON.stringify(document), etag, JSON.stringify(by)],
    );
    return { ...rows[0]!, document: json(rows[0]!.document) };
  }

  // Standing grants ----------------------------------------------------------------------------

  async grantById(id: string, q: Queryable = this.sql, lock = false): Promise<GrantRow | null> {
    const rows = await q.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM accounts.standing_grants WHERE id = $1 AND revoked_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return rows[0] ? grantRow(rows[0]) : null;
  }

  async liveGrantFor(q: Queryable, accountId: string, granteeId: string, scope: string): Promise<GrantRow | null> {
    const rows = await q.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM accounts.standing_grants
        WHERE account_id = $1 AND grantee_id = $2 AND scope = $3 AND revoked_at IS NULL FOR UPDATE`,
      [accountId, granteeId, scope],
    );
    return rows[0] ? grantRow(rows[0]) : null;
  }

  async insertGrant(
    q: Queryable,
    g: Pick<GrantRow, 'id' | 'account_id' | 'grantee_kind' | 'grantee_id' | 'verbs' | 'scope' | 'expires_at' | 'created_by'>,
  ): Promise<GrantRow> {
    const rows = await q.query<GrantRow>(
      `INSERT INTO accounts.standing_grants (id, account_id, grantee_kind, grantee_id, verbs, scope, expires_at, created_by)
       VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8::jsonb) RETURNING ${GRANT_COLUMNS}`,
      [g.id, g.account_id, g.grantee_kind, g.grantee_id, g.verbs, g.scope, g.expires_at, JSON.stringify(g.created_by)],
    );
    return grantRow(rows[0]!);
  }

  async widenGrant(q: Queryable, id: string, verbs: string[], expiresAt: Date | null): Promise<GrantRow> {
    const rows = await q.query<GrantRow>(
      `UPDATE accounts.standing_grants SET verbs = $2::text[], expires_at = $3, updated_at = now()
        WHERE id = $1 RETURNING ${GRANT_COLUMNS}`,
      [id, verbs, expiresAt],
    );
    return grantRow(rows[0]!);
  }

  async revokeGrant(q: Queryable, id: string, by: Actor, at: Date | null = null): Promise<void> {
    await q.query(
      `UPDATE accounts.standing_grants SET revoked_at = coalesce($3, now()), revoked_by = $2::jsonb
        WHERE id = $1 AND revoked_at IS NULL`,
      [id, JSON.stringify(by), at],
    );
  }

  /** A grant that was revoked (deleted), for idempotent deletes. */
  async revokedGrant(id: string): Promise<GrantRow | null> {
    const rows = await this.sql.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM accounts.standing_grants WHERE id = $1 AND revoked_at IS NOT NULL`, [
      id,
    ]);
    return rows[0] ? grantRow(rows[0]) : null;
  }

  /** Live grants given by an account, newest first; `scopePrefix` limits them to a project. */
  async grantsOf(accountId: string, f: { before?: string; limit: number; scopePrefix?: string }): Promise<GrantRow[]> {
    const rows = await this.sql.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM accounts.standing_grants
        WHERE account_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
          AND ($2::text IS NULL OR id < $2)
          AND ($3::text IS NULL OR scope = $3 OR starts_with(scope, $3 || '/'))
        ORDER BY id DESC LIMIT $4`,
      [accountId, f.before ?? null, f.scopePrefix ?? null, f.limit],
    );
    return rows.map(grantRow);
  }

  /** Live grants held by any of the grantee ids, newest first. */
  async grantsHeld(granteeIds: string[], f: { before?: string; limit: number }): Promise<GrantRow[]> {
    const rows = await this.sql.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM accounts.standing_grants
        WHERE grantee_id = ANY($1::text[]) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
          AND ($2::text IS NULL OR id < $2)
        ORDER BY id DESC LIMIT $3`,
      [granteeIds, f.before ?? null, f.limit],
    );
    return rows.map(grantRow);
  }

  // Signing keys -------------------------------------------------------------------------------

  async currentSigningKey(accountId: string, q: Queryable = this.sql, lock = false): Promise<SigningKeyRow | null> {
    const rows = await q.query<SigningKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM accounts.signing_keys WHERE account_id = $1 AND retired_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [accountId],
    );
    return rows[0] ? keyRow(rows[0]) : null;
  }

  /** Inserts a current key unless the account has one (a concurrent first use); true if inserted. */
  async insertSigningKeyIfNone(q: Queryable, k: Pick<SigningKeyRow, 'id' | 'account_id' | 'public_jwk' | 'private_key_enc'>): Promise<boolean> {
    const rows = await q.query(
      `INSERT INTO accounts.signing_keys (id, account_id, public_jwk, private_key_enc) VALUES ($1, $2, $3::jsonb, $4)
       ON CONFLICT (account_id) WHERE retired_at IS NULL DO NOTHING RETURNING id`,
      [k.id, k.account_id, JSON.stringify(k.public_jwk), k.private_key_enc],
    );
    return rows.length > 0;
  }

  async retireSigningKey(q: Queryable, id: string, verifyUntil: Date): Promise<void> {
    await q.query(`UPDATE accounts.signing_keys SET retired_at = now(), verify_until = $2 WHERE id = $1`, [id, verifyUntil]);
  }

  /** Retired keys whose grace period has not ended, newest first. */
  async verifiableRetiredKeys(accountId: string): Promise<SigningKeyRow[]> {
    const rows = await this.sql.query<SigningKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM accounts.signing_keys
        WHERE account_id = $1 AND retired_at IS NOT NULL AND verify_until > now() ORDER BY id DESC LIMIT 50`,
      [accountId],
    );
    return rows.map(keyRow);
  }

  async signingKeyById(accountId: string, id: string): Promise<SigningKeyRow | null> {
    const rows = await this.sql.query<SigningKeyRow>(`SELECT ${KEY_COLUMNS} FROM accounts.signing_keys WHERE account_id = $1 AND id = $2`, [
      accountId,
      id,
    ]);
    return rows[0] ? keyRow(rows[0]) : null;
  }

  // Hosts --------------------------------------------------------------------------------------

  async insertHost(
    q: Queryable,
    h: Pick<HostRow, 'id' | 'account_id' | 'name' | 'credential_hash' | 'credential_prefix' | 'paired_by'>,
  ): Promise<HostRow> {
    const rows = await q.query<HostRow>(
      `INSERT INTO accounts.hosts (id, account_id, name, credential_hash, credential_prefix, paired_by)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING ${HOST_COLUMNS}`,
      [h.id, h.account_id, h.name, h.credential_hash, h.credential_prefix, JSON.stringify(h.paired_by)],
    );
    return hostRow(rows[0]!);
  }

  async hostById(id: string, q: Queryable = this.sql, lock = false): Promise<HostRow | null> {
    const rows = await q.query<HostRow>(
      `SELECT ${HOST_COLUMNS} FROM accounts.hosts WHERE id = $1 AND unpaired_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return rows[0] ? hostRow(rows[0]) : null;
  }

  async unpairedHost(id: string): Promise<HostRow | null> {
    const rows = await this.sql.query<HostRow>(`SELECT ${HOST_COLUMNS} FROM accounts.hosts WHERE id = $1 AND unpaired_at IS NOT NULL`, [id]);
    return rows[0] ? hostRow(rows[0]) : null;
  }

  async hostByCredentialHash(hash: string): Promise<HostRow | null> {
    const rows = await this.sql.query<HostRow>(`SELECT ${HOST_COLUMNS} FROM accounts.hosts WHERE credential_hash = $1 AND unpaired_at IS NULL`, [
      hash,
    ]);
    return rows[0] ? hostRow(rows[0]) : null;
  }

  async hostsOf(accountId: string, f: { before?: string; limit: number }): Promise<HostRow[]> {
    const rows = await this.sql.query<HostRow>(
      `SELECT ${HOST_COLUMNS} FROM accounts.hosts WHERE account_id = $1 AND unpaired_at IS NULL AND ($2::text IS NULL OR id < $2)
        ORDER BY id DESC LIMIT $3`,
      [accountId, f.before ?? null, f.limit],
    );
    return rows.map(hostRow);
  }

  async unpairHost(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE accounts.hosts SET unpaired_at = now() WHERE id = $1 AND unpaired_at IS NULL`, [id]);
  }

  async touchHost(id: string): Promise<void> {
    await this.sql.query(`UPDATE accounts.hosts SET last_seen_at = now() WHERE id = $1`, [id]);
  }

  // Agents (records the agents service keeps here) -----------------------------------------------

  /** A live agent's record. */
  async agentById(id: string): Promise<AgentRecordRow | null> {
    const rows = await this.sql.query<AgentRecordRow>(
      `SELECT id, owner_account_id, name, version, deleted FROM accounts.agents WHERE id = $1 AND NOT deleted`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Writes each record newer than the one held (ids distinct); returns the ids written. */
  async syncAgents(q: Queryable, records: AgentRecordRow[]): Promise<string[]> {
    if (!records.length) return [];
    const rows = await q.query<{ id: string }>(
      `INSERT INTO accounts.agents (id, owner_account_id, name, version, deleted)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::boolean[])
       ON CONFLICT (id) DO UPDATE SET owner_account_id = EXCLUDED.owner_account_id, name = EXCLUDED.name,
         version = EXCLUDED.version, deleted = EXCLUDED.deleted, synced_at = now()
         WHERE accounts.agents.version < EXCLUDED.version
       RETURNING id`,
      [
        records.map((r) => r.id),
        records.map((r) => r.owner_account_id),
        records.map((r) => r.name),
        records.map((r) => r.version),
        records.map((r) => r.deleted),
      ],
    );
    return rows.map((r) => r.id);
  }

  async forgetAgent(id: string): Promise<void> {
    await this.sql.query(`DELETE FROM accounts.agents WHERE id = $1`, [id]);
  }

  // Audit --------------------------------------------------------------------------------------

  async insertAudit(q: Queryable, a: AuditRow): Promise<void> {
    await q.query(
      `INSERT INTO accounts.audit_events (id, account_id, action, actor, target_kind, target_id, data, occurred_at)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb, $8) ON CONFLICT (id) DO NOTHING`,
      [a.id, a.account_id, a.action, JSON.stringify(a.actor), a.target_kind, a.target_id, JSON.stringify(a.data), a.occurred_at],
    );
  }

  async audit(accountId: string, f: { before?: string; limit: number; action?: string }): Promise<AuditRow[]> {
    const rows = await this.sql.query<AuditRow>(
      `SELECT id, account_id, action, actor, target_kind, target_id, data, occurred_at FROM accounts.audit_events
        WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::text IS NULL OR action = $3)
        ORDER BY id DESC LIMIT $4`,
      [accountId, f.before ?? null, f.action ?? null, f.limit],
    );
    return rows.map(auditRow);
  }

  /** One member of an organization, with the role and when it was added. */
  async member(orgId: string, memberId: string): Promise<MemberRow | null> {
    const rows = await this.sql.query<MemberRow>(
      `SELECT a.id, a.kind, a.name, a.email, a.is_operator, a.created_at, m.role, m.created_at AS added_at
         FROM accounts.memberships m JOIN accounts.accounts a ON a.id = m.member_id
        WHERE m.org_id = $1 AND m.member_id = $2`,
      [orgId, memberId],
    );
    return rows[0] ?? null;
  }

  async auditById(accountId: string, id: string): Promise<AuditRow | null> {
    const rows = await this.sql.query<AuditRow>(
      `SELECT id, account_id, action, actor, target_kind, target_id, data, occurred_at FROM accounts.audit_events WHERE account_id = $1 AND id = $2`,
      [accountId, id],
    );
    return rows[0] ? auditRow(rows[0]) : null;
  }

  async renameHost(q: Queryable, id: string, name: string): Promise<HostRow> {
    const rows = await q.query<HostRow>(`UPDATE accounts.hosts SET name = $2 WHERE id = $1 RETURNING ${HOST_COLUMNS}`, [id, name]);
    return hostRow(rows[0]!);
  }
}
