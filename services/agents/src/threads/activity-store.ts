import type { Queryable, Sql } from '@svc/kit';

import { type EventRow, eventRow, type RunRow, runRow } from './store.js';

/** SQL of the account-wide and housekeeping thread operations (extras.ts). */

export interface AgentUsageLineRow {
  agent_id: string;
  threads: number;
  runs: number;
  failed: number;
  input_tokens: string;
  output_tokens: string;
  cost: string;
}

export interface ParticipantRow {
  kind: string;
  id: string;
  events: number;
  messages: number;
  first_at: Date;
  last_at: Date;
}

export class ThreadExtrasStore {
  constructor(readonly sql: Sql) {}

  /** The thread's messages whose text contains the text (`~*` with kit's containsText: linear time), newest first. */
  async searchMessages(threadId: string, pattern: string, limit: number): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND type IN ('message.created', 'message.injected') AND data->>'content' ~* $2
        ORDER BY seq DESC LIMIT $3`,
      [threadId, pattern, limit],
    );
    return rows.map(eventRow);
  }

  /** Runs of an account's live threads (of a project), newest first. */
  async accountRuns(f: {
    accountId: string;
    projectId?: string;
    status?: string;
    agentId?: string;
    before?: { at: string; id: string };
    limit: number;
  }): Promise<(RunRow & { tool_calls: number })[]> {
    const rows = await this.sql.query<RunRow & { tool_calls: number }>(
      `SELECT r.*, (SELECT count(*)::int FROM agents.tool_calls c WHERE c.run_id = r.id) AS tool_calls
         FROM agents.runs r JOIN agents.threads t ON t.id = r.thread_id AND t.deleted_at IS NULL
        WHERE r.account_id = $1 AND ($2::text IS NULL OR t.project_id = $2) AND ($3::text IS NULL OR r.status = $3)
          AND ($4::text IS NULL OR r.agent_id = $4)
          AND ($5::timestamptz IS NULL OR (r.created_at, r.id) < ($5::timestamptz, $6::text))
        ORDER BY r.created_at DESC, r.id DESC LIMIT $7`,
      [f.accountId, f.projectId ?? null, f.status ?? null, f.agentId ?? null, f.before?.at ?? null, f.before?.id ?? null, f.limit],
    );
    return rows.map((r) => ({ ...runRow(r), tool_calls: Number(r.tool_calls) }));
  }

  /** Usage per agent over an account's runs (of a project), since a time. */
  async usageByAgent(accountId: string, projectId: string | undefined, since: Date | null): Promise<AgentUsageLineRow[]> {
    const rows = await this.sql.query<AgentUsageLineRow>(
      `SELECT r.agent_id, count(DISTINCT r.thread_id)::int AS threads, count(*)::int AS runs,
              (count(*) FILTER (WHERE r.status = 'failed'))::int AS failed,
              sum(r.input_tokens)::text AS input_tokens, sum(r.output_tokens)::text AS output_tokens, sum(r.cost)::text AS cost
         FROM agents.runs r JOIN agents.threads t ON t.id = r.thread_id
        WHERE r.account_id = $1 AND ($2::text IS NULL OR t.project_id = $2) AND ($3::timestamptz IS NULL OR r.created_at >= $3)
        GROUP BY r.agent_id ORDER BY sum(r.cost) DESC, r.agent_id LIMIT 500`,
      [accountId, projectId ?? null, since],
    );
    return rows.map((r) => ({ ...r, threads: Number(r.threads), runs: Number(r.runs), failed: Number(r.failed) }));
  }

  async participants(threadId: string): Promise<ParticipantRow[]> {
    const rows = await this.sql.query<ParticipantRow>(
      `SELECT producer->>'kind' AS kind, COALESCE(producer->>'id', '') AS id, count(*)::int AS events,
              (count(*) FILTER (WHERE type IN ('message.created', 'message.injected')))::int AS messages,
              min(created_at) AS first_at, max(created_at) AS last_at
         FROM agents.thread_events WHERE thread_id = $1 GROUP BY 1, 2 ORDER BY min(seq)`,
      [threadId],
    );
    return rows.map((r) => ({ ...r, events: Number(r.events), messages: Number(r.messages) }));
  }

  /** Idle, unarchived live threads of an account without activity since `before`, locked (at most 500). */
  async idleThreads(q: Queryable, f: { accountId: string; projectId?: string; agentId?: string; before: Date }): Promise<string[]> {
    const rows = await q.query<{ id: string }>(
      `SELECT id FROM agents.threads
        WHERE account_id = $1 AND deleted_at IS NULL AND archived_at IS NULL AND status = 'idle' AND last_activity_at < $2
          AND ($3::text IS NULL OR project_id = $3) AND ($4::text IS NULL OR agent_id = $4)
        ORDER BY last_activity_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
      [f.accountId, f.before, f.projectId ?? null, f.agentId ?? null],
    );
    return rows.map((r) => r.id);
  }

  async archive(q: Queryable, ids: string[]): Promise<void> {
    await q.query(`UPDATE agents.threads SET archived_at = now(), updated_at = now() WHERE id = ANY($1::text[])`, [ids]);
  }

  /** Events after a seq, of the given types (all when none), oldest first. */
  async eventsOf(threadId: string, after: number, types: string[], limit: number): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND seq > $2 AND (cardinality($3::text[]) = 0 OR type = ANY($3::text[]))
        ORDER BY seq LIMIT $4`,
      [threadId, after, types, limit],
    );
    return rows.map(eventRow);
  }

  /** A run's step events: its model turns, tool calls and tool results, in order. */
  async stepEvents(threadId: string, runId: string): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND run_id = $2 AND type IN ('run.step', 'tool.called', 'tool.result', 'message.created')
        ORDER BY seq`,
      [threadId, runId],
    );
    return rows.map(eventRow);
  }
}
