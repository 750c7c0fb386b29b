import type { Actor, Queryable, Sql } from '@svc/kit';

export type { Actor };

export const SCHEMA = 'agents';

export interface AgentRow {
  id: string;
  owner_account_id: string;
  project_id: string | null;
  name: string;
  description: string | null;
  model: string | null;
  instructions: string | null;
  /** The tools its runs may call (names or `*` patterns); null: the runtime's default set. */
  tools: string[] | null;
  max_steps: number | null;
  max_tokens_per_run: number | null;
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
  /** 1 when created, +1 per change and on deletion. */
  version: number;
}

export type AgentFields = Pick<AgentRow, 'name' | 'description' | 'model' | 'instructions' | 'tools' | 'max_steps' | 'max_tokens_per_run'>;

export const COLUMNS = `id, owner_account_id, project_id, name, description, model, instructions, tools, max_steps, max_tokens_per_run,
  created_by, created_at, updated_at, deleted_at, version`;

export const agentRow = (r: AgentRow): AgentRow => ({ ...r, created_by: typeof r.created_by === 'string' ? JSON.parse(r.created_by) : r.created_by });

/** SQL for agents. Rules live in agents.ts. */
export class AgentStore {
  constructor(readonly sql: Sql) {}

  async insert(q: Queryable, a: Omit<AgentRow, 'created_at' | 'updated_at' | 'deleted_at' | 'version'>): Promise<AgentRow> {
    const rows = await q.query<AgentRow>(
      `INSERT INTO agents.agents (id, owner_account_id, project_id, name, description, model, instructions, tools, max_steps,
         max_tokens_per_run, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb) RETURNING ${COLUMNS}`,
      [
        a.id,
        a.owner_account_id,
        a.project_id,
        a.name,
        a.description,
        a.model,
        a.instructions,
        a.tools,
        a.max_steps,
        a.max_tokens_per_run,
        JSON.stringify(a.created_by),
      ],
    );
    return agentRow(rows[0]!);
  }

  /** A live (not deleted) agent. */
  async byId(id: string, q: Queryable = this.sql, lock = false): Promise<AgentRow | null> {
    const rows = await q.query<AgentRow>(`SELECT ${COLUMNS} FROM agents.agents WHERE id = $1 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`, [
      id,
    ]);
    return rows[0] ? agentRow(rows[0]) : null;
  }

  async byIds(ids: string[]): Promise<AgentRow[]> {
    if (!ids.length) return [];
    const rows = await this.sql.query<AgentRow>(`SELECT ${COLUMNS} FROM agents.agents WHERE id = ANY($1::text[]) AND deleted_at IS NULL`, [ids]);
    return rows.map(agentRow);
  }

  /** Live agents of an account, newest first. */
  async list(f: { ownerAccountId: string; projectId?: string; before?: string; limit: number }): Promise<AgentRow[]> {
    const rows = await this.sql.query<AgentRow>(
      `SELECT ${COLUMNS} FROM agents.agents
        WHERE owner_account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2) AND ($3::text IS NULL OR id < $3)
        ORDER BY id DESC LIMIT $4`,
      [f.ownerAccountId, f.projectId ?? null, f.before ?? null, f.limit],
    );
    return rows.map(agentRow);
  }

  async update(q: Queryable, id: string, fields: AgentFields & { owner_account_id: string }): Promise<AgentRow> {
    const rows = await q.query<AgentRow>(
      `UPDATE agents.agents SET name = $2, description = $3, model = $4, instructions = $5, owner_account_id = $6, tools = $7, max_steps = $8,
        max_tokens_per_run = $9, updated_at = now(), version = version + 1
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        fields.name,
        fields.description,
        fields.model,
        fields.instructions,
        fields.owner_account_id,
        fields.tools,
        fields.max_steps,
        fields.max_tokens_per_run,
      ],
    );
    return agentRow(rows[0]!);
  }

  /** Marks the agent deleted; the deleted row, or null when it already was. */
  async markDeleted(q: Queryable, id: string): Promise<AgentRow | null> {
    const rows = await q.query<AgentRow>(
      `UPDATE agents.agents SET deleted_at = now(), version = version + 1 WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
      [id],
    );
    return rows[0] ? agentRow(rows[0]) : null;
  }

  /** Every agent, deleted ones too, by id, a page at a time (for the accounts service's records). */
  async page(after: string | null, limit: number): Promise<AgentRow[]> {
    const rows = await this.sql.query<AgentRow>(`SELECT ${COLUMNS} FROM agents.agents WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2`, [
      after,
      limit,
    ]);
    return rows.map(agentRow);
  }

  /** Removes the agent from every account's defaults. */
  async dropFromDefaults(q: Queryable, agentId: string): Promise<void> {
    await q.query(`DELETE FROM agents.default_agents WHERE agent_id = $1`, [agentId]);
  }

  async defaults(accountId: string): Promise<AgentRow[]> {
    const rows = await this.sql.query<AgentRow>(
      `SELECT ${COLUMNS.split(',')
        .map((c) => `a.${c.trim()}`)
        .join(', ')}
         FROM agents.default_agents d JOIN agents.agents a ON a.id = d.agent_id
        WHERE d.account_id = $1 AND a.deleted_at IS NULL ORDER BY d.position`,
      [accountId],
    );
    return rows.map(agentRow);
  }

  async setDefaults(q: Queryable, accountId: string, agentIds: string[]): Promise<void> {
    // Concurrent replacements of one account's defaults take turns.
    await q.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`agents.defaults:${accountId}`]);
    await q.query(`DELETE FROM agents.default_agents WHERE account_id = $1`, [accountId]);
    if (!agentIds.length) return;
    await q.query(
      `INSERT INTO agents.default_agents (account_id, position, agent_id)
       SELECT $1, p.pos::int, p.id FROM unnest($2::text[]) WITH ORDINALITY AS p(id, pos)`,
      [accountId, agentIds],
    );
  }

  /** A deleted agent. */
  async deletedById(id: string): Promise<AgentRow | null> {
    const rows = await this.sql.query<AgentRow>(`SELECT ${COLUMNS} FROM agents.agents WHERE id = $1 AND deleted_at IS NOT NULL`, [id]);
    return rows[0] ? agentRow(rows[0]) : null;
  }

  /** Agents of an account deleted since a time, most recently deleted first. */
  async listDeleted(f: {
    ownerAccountId: string;
    projectId?: string;
    since: Date;
    before?: { at: string; id: string };
    limit: number;
  }): Promise<AgentRow[]> {
    const rows = await this.sql.query<AgentRow>(
      `SELECT ${COLUMNS} FROM agents.agents
        WHERE owner_account_id = $1 AND deleted_at IS NOT NULL AND deleted_at > $3 AND ($2::text IS NULL OR project_id = $2)
          AND ($4::timestamptz IS NULL OR (deleted_at, id) < ($4::timestamptz, $5::text))
        ORDER BY deleted_at DESC, id DESC LIMIT $6`,
      [f.ownerAccountId, f.projectId ?? null, f.since, f.before?.at ?? null, f.before?.id ?? null, f.limit],
    );
    return rows.map(agentRow);
  }

  /** Undoes a deletion; the restored row, or null when it was not deleted. */
  async restore(q: Queryable, id: string): Promise<AgentRow | null> {
    const rows = await q.query<AgentRow>(
      `UPDATE agents.agents SET deleted_at = NULL, updated_at = now(), version = version + 1 WHERE id = $1 AND deleted_at IS NOT NULL RETURNING ${COLUMNS}`,
      [id],
    );
    return rows[0] ? agentRow(rows[0]) : null;
  }
}
