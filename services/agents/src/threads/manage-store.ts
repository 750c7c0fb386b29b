import type { Queryable, Sql } from '@svc/kit';

import {
  type ContextMessage,
  type EventRow,
  eventRow,
  type InboxRow,
  inboxRow,
  type RunRow,
  runRow,
  THREAD_COLUMNS,
  type ThreadRow,
  threadRow,
  type ToolCallRow,
} from './store.js';

/** SQL of the thread operations (ops.ts): messages, runs, tool calls, tags, search, the deleted threads. */

const MESSAGE_TYPES = `type IN ('message.created', 'message.injected')`;

export interface ToolStatRow {
  name: string;
  calls: number;
  errors: number;
  last_called_at: Date;
}

export interface ToolCallFullRow extends ToolCallRow {
  created_at: Date;
  finished_at: Date | null;
}

export interface UsageRow {
  model: string;
  input_tokens: string;
  output_tokens: string;
  cost: string;
  turns: number;
}

export class ThreadOpsStore {
  constructor(readonly sql: Sql) {}

  /** Events recording messages (user and agent), oldest first, after a seq. */
  async messageEvents(threadId: string, after: number, limit: number, role?: string): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND ${MESSAGE_TYPES} AND seq > $2 AND ($3::text IS NULL OR data->>'role' = $3)
        ORDER BY seq LIMIT $4`,
      [threadId, after, role ?? null, limit],
    );
    return rows.map(eventRow);
  }

  /** The event recording a message, by the message's id. */
  async messageEvent(threadId: string, messageId: string): Promise<EventRow | null> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND ${MESSAGE_TYPES} AND data->>'messageId' = $2 ORDER BY seq LIMIT 1`,
      [threadId, messageId],
    );
    return rows[0] ? eventRow(rows[0]) : null;
  }

  /** The latest message of the agent, if any. */
  async lastReply(threadId: string): Promise<EventRow | null> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND type = 'message.created' AND data->>'role' = 'assistant'
        ORDER BY seq DESC LIMIT 1`,
      [threadId],
    );
    return rows[0] ? eventRow(rows[0]) : null;
  }

  async inboxRows(threadId: string, ids: string[]): Promise<InboxRow[]> {
    if (!ids.length) return [];
    const rows = await this.sql.query<InboxRow>(`SELECT * FROM agents.thread_inbox WHERE thread_id = $1 AND id = ANY($2::text[])`, [threadId, ids]);
    return rows.map(inboxRow);
  }

  async inbox(q: Queryable, threadId: string, id: string, lock = false): Promise<InboxRow | null> {
    const rows = await q.query<InboxRow>(`SELECT * FROM agents.thread_inbox WHERE thread_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [
      threadId,
      id,
    ]);
    return rows[0] ? inboxRow(rows[0]) : null;
  }

  async editInbox(q: Queryable, id: string, content: string): Promise<InboxRow> {
    const rows = await q.query<InboxRow>(`UPDATE agents.thread_inbox SET content = $2, edited_at = now() WHERE id = $1 RETURNING *`, [id, content]);
    return inboxRow(rows[0]!);
  }

  async retractInbox(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE agents.thread_inbox SET status = 'retracted' WHERE id = $1`, [id]);
  }

  /** Messages waiting for a run (pending and queued), oldest first. */
  async waitingAll(threadId: string): Promise<InboxRow[]> {
    const rows = await this.sql.query<InboxRow>(
      `SELECT * FROM agents.thread_inbox WHERE thread_id = $1 AND status IN ('pending', 'queued') ORDER BY created_at, id`,
      [threadId],
    );
    return rows.map(inboxRow);
  }

  async event(threadId: string, seq: number): Promise<EventRow | null> {
    const rows = await this.sql.query<EventRow>(`SELECT * FROM agents.thread_events WHERE thread_id = $1 AND seq = $2`, [threadId, seq]);
    return rows[0] ? eventRow(rows[0]) : null;
  }

  /** Events up to a seq (a fork's history). */
  async eventsUpTo(threadId: string, seq: number): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(
      `SELECT * FROM agents.thread_events WHERE thread_id = $1 AND seq <= $2 AND ${MESSAGE_TYPES} ORDER BY seq`,
      [threadId, seq],
    );
    return rows.map(eventRow);
  }

  /** A thread's runs, newest first, with their count of tool calls. */
  async runs(threadId: string, before: { at: string; id: string } | undefined, limit: number): Promise<(RunRow & { tool_calls: number })[]> {
    const rows = await this.sql.query<RunRow & { tool_calls: number }>(
      `SELECT r.*, (SELECT count(*)::int FROM agents.tool_calls c WHERE c.run_id = r.id) AS tool_calls FROM agents.runs r
        WHERE r.thread_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2::timestamptz, $3::text))
        ORDER BY r.created_at DESC, r.id DESC LIMIT $4`,
      [threadId, before?.at ?? null, before?.id ?? null, limit],
    );
    return rows.map((r) => ({ ...runRow(r), tool_calls: Number(r.tool_calls) }));
  }

  async run(threadId: string, runId: string): Promise<(RunRow & { tool_calls: number }) | null> {
    const rows = await this.sql.query<RunRow & { tool_calls: number }>(
      `SELECT r.*, (SELECT count(*)::int FROM agents.tool_calls c WHERE c.run_id = r.id) AS tool_calls FROM agents.runs r
        WHERE r.thread_id = $1 AND r.id = $2`,
      [threadId, runId],
    );
    return rows[0] ? { ...runRow(rows[0]), tool_calls: Number(rows[0].tool_calls) } : null;
  }

  async toolCalls(runId: string): Promise<ToolCallFullRow[]> {
    return this.sql.query<ToolCallFullRow>(`SELECT * FROM agents.tool_calls WHERE run_id = $1 ORDER BY step, created_at, call_id`, [runId]);
  }

  async toolStats(threadId: string): Promise<ToolStatRow[]> {
    const rows = await this.sql.query<ToolStatRow>(
      `SELECT c.name, count(*)::int AS calls, (count(*) FILTER (WHERE c.is_error))::int AS errors, max(c.created_at) AS last_called_at
         FROM agents.tool_calls c JOIN agents.runs r ON r.id = c.run_id WHERE r.thread_id = $1 GROUP BY c.name ORDER BY calls DESC, c.name`,
      [threadId],
    );
    return rows.map((r) => ({ ...r, calls: Number(r.calls), errors: Number(r.errors) }));
  }

  async usageByModel(threadId: string): Promise<UsageRow[]> {
    return this.sql.query<UsageRow>(
      `SELECT usage->>'model' AS model, sum((usage->>'inputTokens')::bigint)::text AS input_tokens,
              sum((usage->>'outputTokens')::bigint)::text AS output_tokens, sum((usage->>'cost')::numeric)::text AS cost, count(*)::int AS turns
         FROM agents.thread_events WHERE thread_id = $1 AND usage IS NOT NULL GROUP BY 1 ORDER BY 1`,
      [threadId],
    );
  }

  async setArchived(q: Queryable, id: string, archived: boolean): Promise<ThreadRow> {
    const rows = await q.query<ThreadRow>(
      `UPDATE agents.threads SET archived_at = CASE WHEN $2 THEN COALESCE(archived_at, now()) END, updated_at = now() WHERE id = $1
       RETURNING ${THREAD_COLUMNS}`,
      [id, archived],
    );
    return threadRow(rows[0]!);
  }

  async setTags(q: Queryable, id: string, tags: string[]): Promise<ThreadRow> {
    const rows = await q.query<ThreadRow>(
      `UPDATE agents.threads SET tags = $2::text[], updated_at = now() WHERE id = $1 RETURNING ${THREAD_COLUMNS}`,
      [id, tags],
    );
    return threadRow(rows[0]!);
  }

  async tagCounts(accountId: string, projectId: string | undefined): Promise<{ tag: string; threads: number }[]> {
    const rows = await this.sql.query<{ tag: string; threads: number }>(
      `SELECT tag, count(*)::int AS threads FROM agents.threads, unnest(tags) AS tag
        WHERE account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2) GROUP BY tag ORDER BY threads DESC, tag LIMIT 500`,
      [accountId, projectId ?? null],
    );
    return rows.map((r) => ({ tag: r.tag, threads: Number(r.threads) }));
  }

  /** Live threads whose title or a message contains the text (`pattern`: `~*` with kit's containsText, linear time), most recent activity first. */
  async search(f: {
    accountId: string;
    projectId?: string;
    pattern: string;
    after?: { at: string; id: string };
    limit: number;
  }): Promise<(ThreadRow & { snippet: string | null; snippet_seq: number | null })[]> {
    const rows = await this.sql.query<ThreadRow & { snippet: string | null; snippet_seq: number | null }>(
      `SELECT t.*, m.content AS snippet, m.seq AS snippet_seq FROM (
          SELECT ${THREAD_COLUMNS} FROM agents.threads
           WHERE account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2)
             AND ($4::timestamptz IS NULL OR (last_activity_at, id) < ($4::timestamptz, $5::text))) t
        LEFT JOIN LATERAL (SELECT e.data->>'content' AS content, e.seq FROM agents.thread_events e
                            WHERE e.thread_id = t.id AND e.${MESSAGE_TYPES} AND e.data->>'content' ~* $3 ORDER BY e.seq DESC LIMIT 1) m ON true
       WHERE t.title ~* $3 OR m.seq IS NOT NULL
       ORDER BY t.last_activity_at DESC, t.id DESC LIMIT $6`,
      [f.accountId, f.projectId ?? null, f.pattern, f.after?.at ?? null, f.after?.id ?? null, f.limit],
    );
    return rows.map((r) => ({ ...threadRow(r), snippet: r.snippet, snippet_seq: r.snippet_seq === null ? null : Number(r.snippet_seq) }));
  }

  /** A deleted thread (deleted_at set). */
  async deletedThread(id: string): Promise<ThreadRow | null> {
    const rows = await this.sql.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM agents.threads WHERE id = $1 AND deleted_at IS NOT NULL`, [id]);
    return rows[0] ? threadRow(rows[0]) : null;
  }

  async listDeleted(f: {
    accountId: string;
    projectId?: string;
    since: Date;
    after?: { at: string; id: string };
    limit: number;
  }): Promise<ThreadRow[]> {
    const rows = await this.sql.query<ThreadRow>(
      `SELECT ${THREAD_COLUMNS} FROM agents.threads
        WHERE account_id = $1 AND deleted_at IS NOT NULL AND deleted_at > $3 AND ($2::text IS NULL OR project_id = $2)
          AND ($4::timestamptz IS NULL OR (deleted_at, id) < ($4::timestamptz, $5::text))
        ORDER BY deleted_at DESC, id DESC LIMIT $6`,
      [f.accountId, f.projectId ?? null, f.since, f.after?.at ?? null, f.after?.id ?? null, f.limit],
    );
    return rows.map(threadRow);
  }

  async restore(q: Queryable, id: string): Promise<ThreadRow | null> {
    const rows = await q.query<ThreadRow>(
      `UPDATE agents.threads SET deleted_at = NULL, updated_at = now() WHERE id = $1 AND deleted_at IS NOT NULL RETURNING ${THREAD_COLUMNS}`,
      [id],
    );
    return rows[0] ? threadRow(rows[0]) : null;
  }

  async setAgent(q: Queryable, id: string, agentId: string): Promise<void> {
    await q.query(`UPDATE agents.threads SET agent_id = $2, updated_at = now() WHERE id = $1`, [id, agentId]);
  }

  async insertFork(
    q: Queryable,
    t: Pick<ThreadRow, 'id' | 'account_id' | 'project_id' | 'agent_id' | 'title' | 'metadata' | 'created_by'> & {
      forked_from_thread_id: string;
      forked_at_seq: number;
      base_context: ContextMessage[];
    },
  ): Promise<void> {
    await q.query(
      `INSERT INTO agents.threads (id, account_id, project_id, agent_id, title, metadata, created_by, forked_from_thread_id, forked_at_seq, base_context)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10::jsonb)`,
      [
        t.id,
        t.account_id,
        t.project_id,
        t.agent_id,
        t.title,
        JSON.stringify(t.metadata),
        JSON.stringify(t.created_by),
        t.forked_from_thread_id,
        t.forked_at_seq,
        JSON.stringify(t.base_context),
      ],
    );
  }

  /** The context of the thread's last finished run created before `before` (what a retried run starts from), or the base context. */
  async contextBefore(q: Queryable, threadId: string, before: Date): Promise<ContextMessage[]> {
    const rows = await q.query<{ context: ContextMessage[] | string }>(
      `SELECT context FROM (
         SELECT context, 0 AS o FROM (SELECT context FROM agents.runs WHERE thread_id = $1 AND status NOT IN ('queued', 'running')
            AND rolled_back_seq IS NULL AND created_at < $2 ORDER BY created_at DESC, id DESC LIMIT 1) r
         UNION ALL SELECT base_context, 1 FROM agents.threads WHERE id = $1 AND base_context IS NOT NULL) c ORDER BY o LIMIT 1`,
      [threadId, before],
    );
    const c = rows[0]?.context;
    return c ? (typeof c === 'string' ? (JSON.parse(c) as ContextMessage[]) : c) : [];
  }

  /** The thread's latest run. */
  async lastRun(q: Queryable, threadId: string): Promise<RunRow | null> {
    const rows = await q.query<RunRow>(`SELECT * FROM agents.runs WHERE thread_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, [threadId]);
    return rows[0] ? runRow(rows[0]) : null;
  }

  /** The message that started a run. */
  async startingMessage(q: Queryable, runId: string): Promise<InboxRow | null> {
    const rows = await q.query<InboxRow>(`SELECT * FROM agents.thread_inbox WHERE run_id = $1 AND status = 'started' ORDER BY created_at LIMIT 1`, [
      runId,
    ]);
    return rows[0] ? inboxRow(rows[0]) : null;
  }

  /** Counts for a thread's summary. */
  async counts(threadId: string) {
    const rows = await this.sql.query<Record<string, number>>(
      `SELECT
         (SELECT count(*) FROM agents.thread_events WHERE thread_id = $1 AND ${MESSAGE_TYPES} AND data->>'role' = 'user')::int AS user_messages,
         (SELECT count(*) FROM agents.thread_events WHERE thread_id = $1 AND type = 'message.created' AND data->>'role' = 'assistant')::int AS agent_messages,
         (SELECT count(*) FROM agents.thread_inbox WHERE thread_id = $1 AND status IN ('pending', 'queued'))::int AS pending_messages,
         (SELECT count(*) FROM agents.runs WHERE thread_id = $1)::int AS runs,
         (SELECT count(*) FROM agents.runs WHERE thread_id = $1 AND status = 'failed')::int AS failed_runs,
         (SELECT count(*) FROM agents.tool_calls c JOIN agents.runs r ON r.id = c.run_id WHERE r.thread_id = $1)::int AS tool_calls,
         (SELECT count(*) FROM agents.tool_calls c JOIN agents.runs r ON r.id = c.run_id WHERE r.thread_id = $1 AND c.is_error)::int AS tool_errors`,
      [threadId],
    );
    const r = rows[0]!;
    return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])) as Record<
      'user_messages' | 'agent_messages' | 'pending_messages' | 'runs' | 'failed_runs' | 'tool_calls' | 'tool_errors',
      number
    >;
  }

  async firstMessage(threadId: string): Promise<EventRow | null> {
    const rows = await this.messageEvents(threadId, 0, 1);
    return rows[0] ?? null;
  }

  async lastFailure(threadId: string): Promise<RunRow | null> {
    const rows = await this.sql.query<RunRow>(
      `SELECT * FROM agents.runs WHERE thread_id = $1 AND status = 'failed' ORDER BY created_at DESC, id DESC LIMIT 1`,
      [threadId],
    );
    return rows[0] ? runRow(rows[0]) : null;
  }
}
