import type { Sql } from '@svc/kit';

import type { ToolCallFullRow } from '../threads/manage-store.js';
import { type RunRow, runRow } from '../threads/store.js';
import { type AgentRow, agentRow, COLUMNS } from './store.js';

/** SQL of the agent operations (agent-ops.ts): an agent's runs, usage and tool calls, agent search. */

export interface AgentUsageRow {
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  active: number;
  threads: number;
  input_tokens: string;
  output_tokens: string;
  cost: string;
  tool_calls: number;
  tool_errors: number;
  last_run_at: Date | null;
}

export class AgentOpsStore {
  constructor(readonly sql: Sql) {}

  /** The agent's runs in live threads, newest first, with their count of tool calls. */
  async runs(
    agentId: string,
    f: { status?: string; before?: { at: string; id: string }; limit: number },
  ): Promise<(RunRow & { tool_calls: number })[]> {
    const rows = await this.sql.query<RunRow & { tool_calls: number }>(
      `SELECT r.*, (SELECT count(*)::int FROM agents.tool_calls c WHERE c.run_id = r.id) AS tool_calls
         FROM agents.runs r JOIN agents.threads t ON t.id = r.thread_id AND t.deleted_at IS NULL
        WHERE r.agent_id = $1 AND ($2::text IS NULL OR r.status = $2)
          AND ($3::timestamptz IS NULL OR (r.created_at, r.id) < ($3::timestamptz, $4::text))
        ORDER BY r.created_at DESC, r.id DESC LIMIT $5`,
      [agentId, f.status ?? null, f.before?.at ?? null, f.before?.id ?? null, f.limit],
    );
    return rows.map((r) => ({ ...runRow(r), tool_calls: Number(r.tool_calls) }));
  }

  /** The agent's running or queued runs (their ids and threads). */
  async activeRuns(agentId: string): Promise<{ id: string; thread_id: string }[]> {
    return this.sql.query(`SELECT id, thread_id FROM agents.runs WHERE agent_id = $1 AND status IN ('queued', 'running')`, [agentId]);
  }

  async usage(agentId: string, since: Date | null): Promise<AgentUsageRow> {
    const rows = await this.sql.query<AgentUsageRow>(
      `WITH r AS (SELECT * FROM agents.runs WHERE agent_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2))
       SELECT count(*)::int AS runs,
              (count(*) FILTER (WHERE status = 'completed'))::int AS completed,
              (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
              (count(*) FILTER (WHERE status = 'cancelled'))::int AS cancelled,
              (count(*) FILTER (WHERE status IN ('queued', 'running')))::int AS active,
              count(DISTINCT thread_id)::int AS threads,
              COALESCE(sum(input_tokens), 0)::text AS input_tokens,
              COALESCE(sum(output_tokens), 0)::text AS output_tokens,
              COALESCE(sum(cost), 0)::text AS cost,
              (SELECT count(*) FROM agents.tool_calls c WHERE c.run_id IN (SELECT id FROM r))::int AS tool_calls,
              (SELECT count(*) FROM agents.tool_calls c WHERE c.run_id IN (SELECT id FROM r) AND c.is_error)::int AS tool_errors,
              max(created_at) AS last_run_at
         FROM r`,
      [agentId, since],
    );
    return rows[0]!;
  }

  /** The agent's tool calls in live threads, newest first. */
  async toolCalls(
    agentId: string,
    f: { name?: string; before?: { at: string; id: string }; limit: number },
  ): Promise<(ToolCallFullRow & { thread_id: string })[]> {
    return this.sql.query<ToolCallFullRow & { thread_id: string }>(
      `SELECT c.*, r.thread_id FROM agents.tool_calls c
         JOIN agents.runs r ON r.id = c.run_id JOIN agents.threads t ON t.id = r.thread_id AND t.deleted_at IS NULL
        WHERE r.agent_id = $1 AND ($2::text IS NULL OR c.name = $2)
          AND ($3::timestamptz IS NULL OR (c.created_at, c.run_id || ':' || c.call_id) < ($3::timestamptz, $4::text))
        ORDER BY c.created_at DESC, c.run_id || ':' || c.call_id DESC LIMIT $5`,
      [agentId, f.name ?? null, f.before?.at ?? null, f.before?.id ?? null, f.limit],
    );
  }

  /** Live agents of an account whose name, description or instructions contain the text (`~*` with kit's containsText: linear time). */
  async search(accountId: string, projectId: string | undefined, pattern: string, limit: number): Promise<AgentRow[]> {
    const rows = await this.sql.query<AgentRow>(
      `SELECT ${COLUMNS} FROM agents.agents
        WHERE owner_account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2)
          AND (name ~* $3 OR description ~* $3 OR instructions ~* $3)
        ORDER BY (name ~* $3) DESC, id DESC LIMIT $4`,
      [accountId, projectId ?? null, pattern, limit],
    );
    return rows.map(agentRow);
  }
}
