import type { Sql } from '@svc/kit';

export const SCHEMA = 'accounts';

export interface AccountRow {
  id: string;
  kind: 'user' | 'organization';
  name: string;
  email: string | null;
  is_operator: boolean;
  created_at: Date;
}

const COLUMNS = 'id, kind, name, email, is_operator, created_at';

export class AccountStore {
  constructor(private readonly sql: Sql) {}

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

  async byId(id: string): Promise<AccountRow | null> {
    const rows = await this.sql.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts.accounts WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  async membership(orgId: string, memberId: string): Promise<string | null> {
    const rows = await this.sql.query<{ role: string }>(
      `SELECT role FROM accounts.memberships WHERE org_id = $1 AND member_id = $2`,
      [orgId, memberId],
    );
    return rows[0]?.role ?? null;
  }

  async organizationsOf(memberId: string): Promise<Array<AccountRow & { role: string }>> {
    return this.sql.query(
      `SELECT a.id, a.kind, a.name, a.email, a.is_operator, a.created_at, m.role
         FROM accounts.memberships m JOIN accounts.accounts a ON a.id = m.org_id
        WHERE m.member_id = $1 ORDER BY a.id`,
      [memberId],
    );
  }
}
