import type { Actor, Queryable, Sql } from '@svc/kit';

/** SQL for threads, their events, runs, inbox and tool calls. Rules live in threads.ts and the runtime. */

export interface ThreadRow {
  id: string;
  account_id: string;
  project_id: string | null;
  agent_id: string;
  title: string | null;
  metadata: Record<string, unknown>;
  status: 'idle' | 'running';
  current_run_id: string | null;
  last_seq: number;
  input_tokens: number;
  output_tokens: number;
  cost: string;
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
  last_activity_at: Date;
  deleted_at: Date | null;
  archived_at: Date | null;
  tags: string[];
  forked_from_thread_id: string | null;
  forked_at_seq: number | null;
}

/** Who produced an event: a person, the agent, a tool, or the platform. */
export interface Producer {
  kind: 'human' | 'agent' | 'tool' | 'system';
  id: string;
  keyId: string | null;
}

export interface EventUsage {
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: string;
  currency: string;
}

export interface EventRow {
  thread_id: string;
  seq: number;
  id: string;
  type: string;
  run_id: string | null;
  producer: Producer;
  data: Record<string, unknown>;
  usage: EventUsage | null;
  created_at: Date;
}

/** An event to append: its seq is given by the append. */
export interface NewEvent {
  type: string;
  runId?: string | null;
  producer: Producer;
  data: Record<string, unknown>;
  usage?: EventUsage | null;
}

/** One message of a run's model context, as the runtime keeps it in its checkpoint. */
export interface ContextMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: { id: string; name: string; argumentsJson: string }[];
  toolCallId?: string;
  name?: string;
}

export interface RunRow {
  id: string;
  thread_id: string;
  account_id: string;
  agent_id: string;
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  step: number;
  context: ContextMessage[];
  started_by: Actor;
  cancel_requested: boolean;
  input_tokens: number;
  output_tokens: number;
  cost: string;
  error: { code: string; message: string } | null;
  /** The seq of its run.rolled_back event: a message rolled it back (docs/threads.md, "Rollback"). */
  rolled_back_seq: number | null;
  /** Paused until a person answers (docs/threads.md, "Approvals"): no worker holds it meanwhile. */
  waiting_for: 'approval' | 'answer' | null;
  worker: string | null;
  lease_until: Date | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
}

export type InjectMode = 'boundary' | 'interrupt' | 'enqueue' | 'reject' | 'rollback';

export interface InboxRow {
  id: string;
  thread_id: string;
  client_message_id: string | null;
  content: string;
  mode: InjectMode;
  status: 'pending' | 'queued' | 'delivered' | 'started' | 'retracted' | 'rolled_back';
  run_id: string | null;
  delivered_step: number | null;
  producer: Producer;
  created_at: Date;
  edited_at?: Date | null;
}

export interface ToolCallRow {
  run_id: string;
  call_id: string;
  step: number;
  name: string;
  arguments: unknown;
  status: 'started' | 'done';
  result: unknown;
  is_error: boolean;
  /** The call was stopped, or never begun, because its run was told to stop (docs/threads.md, "Aborting a tool"). */
  aborted: boolean;
}

/** A thread's columns (not its base context, which only lastContext reads). */
export const THREAD_COLUMNS = `id, account_id, project_id, agent_id, title, metadata, status, current_run_id, last_seq, input_tokens,
  output_tokens, cost, created_by, created_at, updated_at, last_activity_at, deleted_at, archived_at, tags, forked_from_thread_id, forked_at_seq`;

const json = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
export const threadRow = (r: ThreadRow): ThreadRow => ({ ...r, metadata: json(r.metadata), created_by: json(r.created_by), cost: String(r.cost) });
export const eventRow = (r: EventRow): EventRow => ({ ...r, producer: json(r.producer), data: json(r.data), usage: r.usage ? json(r.usage) : null });
export const runRow = (r: RunRow): RunRow => ({
  ...r,
  context: json(r.context),
  started_by: json(r.started_by),
  error: r.error ? json(r.error) : null,
  cost: String(r.cost),
  rolled_back_seq: r.rolled_back_seq === null || r.rolled_back_seq === undefined ? null : Number(r.rolled_back_seq),
});
export const inboxRow = (r: InboxRow): InboxRow => ({ ...r, producer: json(r.producer) });

export class ThreadStore {
  constructor(readonly sql: Sql) {}

  async insertThread(
    q: Queryable,
    t: Pick<ThreadRow, 'id' | 'account_id' | 'project_id' | 'agent_id' | 'title' | 'metadata' | 'created_by'>,
  ): Promise<ThreadRow> {
    const rows = await q.query<ThreadRow>(
      `INSERT INTO agents.threads (id, account_id, project_id, agent_id, title, metadata, created_by)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb) RETURNING ${THREAD_COLUMNS}`,
      [t.id, t.account_id, t.project_id, t.agent_id, t.title, JSON.stringify(t.metadata), JSON.stringify(t.created_by)],
    );
    return threadRow(rows[0]!);
  }

  /** A live thread. */
  async thread(id: string, q: Queryable = this.sql, lock = false): Promise<ThreadRow | null> {
    const rows = await q.query<ThreadRow>(
      `SELECT ${THREAD_COLUMNS} FROM agents.threads WHERE id = $1 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return rows[0] ? threadRow(rows[0]) : null;
  }

  /** Live threads of an account, most recent activity first; `after` is the last row of the page before. */
  async listThreads(f: {
    accountId: string;
    projectId?: string;
    agentId?: string;
    status?: string;
    tag?: string;
    archived?: boolean;
    after?: { at: string; id: string };
    limit: number;
  }): Promise<ThreadRow[]> {
    const rows = await this.sql.query<ThreadRow>(
      `SELECT ${THREAD_COLUMNS} FROM agents.threads
        WHERE account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR project_id = $2) AND ($3::text IS NULL OR agent_id = $3)
          AND ($4::text IS NULL OR status = $4)
          AND ($5::timestamptz IS NULL OR (last_activity_at, id) < ($5::timestamptz, $6::text))
          AND ($8::text IS NULL OR tags @> ARRAY[$8::text]) AND (archived_at IS NOT NULL) = $9
        ORDER BY last_activity_at DESC, id DESC LIMIT $7`,
      [
        f.accountId,
        f.projectId ?? null,
        f.agentId ?? null,
        f.status ?? null,
        f.after?.at ?? null,
        f.after?.id ?? null,
        f.limit,
        f.tag ?? null,
        f.archived === true,
      ],
    );
    return rows.map(threadRow);
  }

  async updateThread(q: Queryable, id: string, f: { title: string | null; metadata: Record<string, unknown> }): Promise<ThreadRow> {
    const rows = await q.query<ThreadRow>(
      `UPDATE agents.threads SET title = $2, metadata = $3::jsonb, updated_at = now() WHERE id = $1 RETURNING ${THREAD_COLUMNS}`,
      [id, f.title, JSON.stringify(f.metadata)],
    );
    return threadRow(rows[0]!);
  }

  async setThreadRun(q: Queryable, id: string, runId: string | null): Promise<void> {
    await q.query(`UPDATE agents.threads SET status = $2, current_run_id = $3, updated_at = now() WHERE id = $1`, [
      id,
      runId ? 'running' : 'idle',
      runId,
    ]);
  }

  async addUsage(q: Queryable, id: string, u: { inputTokens: number; outputTokens: number; cost: string }): Promise<void> {
    await q.query(
      `UPDATE agents.threads SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3, cost = cost + $4::numeric WHERE id = $1`,
      [id, u.inputTokens, u.outputTokens, u.cost],
    );
  }

  async markThreadDeleted(q: Queryable, id: string): Promise<ThreadRow | null> {
    const rows = await q.query<ThreadRow>(
      `UPDATE agents.threads SET deleted_at = now(), status = 'idle', current_run_id = NULL WHERE id = $1 AND deleted_at IS NULL RETURNING ${THREAD_COLUMNS}`,
      [id],
    );
    return rows[0] ? threadRow(rows[0]) : null;
  }

  /**
   * Appends events to a thread in the caller's transaction: the thread's row lock orders appends,
   * so seqs are gapless and increasing. Returns the rows as written.
   */
  async append(q: Queryable, threadId: string, events: NewEvent[], newId: () => string): Promise<EventRow[]> {
    if (!events.length) return [];
    const bumped = await q.query<{ last_seq: number }>(
      `UPDATE agents.threads SET last_seq = last_seq + $2, last_activity_at = now() WHERE id = $1 RETURNING last_seq`,
      [threadId, events.length],
    );
    if (!bumped[0]) throw new Error(`thread ${threadId} is gone`);
    const first = Number(bumped[0].last_seq) - events.length + 1;
    const rows = await q.query<EventRow>(
      `INSERT INTO agents.thread_events (thread_id, seq, id, type, run_id, producer, data, usage)
       SELECT $1, s.seq, s.id, s.type, s.run_id, s.producer::jsonb, s.data::jsonb, s.usage::jsonb
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           AS s(seq, id, type, run_id, producer, data, usage)
       RETURNING *`,
      [
        threadId,
        events.map((_, i) => first + i),
        events.map(() => newId()),
        events.map((e) => e.type),
        events.map((e) => e.runId ?? null),
        events.map((e) => JSON.stringify(e.producer)),
        events.map((e) => JSON.stringify(e.data)),
        events.map((e) => (e.usage ? JSON.stringify(e.usage) : null)),
      ],
    );
    return rows.map(eventRow).sort((a, b) => a.seq - b.seq);
  }

  async events(threadId: string, after: number, limit: number): Promise<EventRow[]> {
    const rows = await this.sql.query<EventRow>(`SELECT * FROM agents.thread_events WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
      threadId,
      after,
      limit,
    ]);
    return rows.map(eventRow);
  }

  async insertRun(q: Queryable, r: Pick<RunRow, 'id' | 'thread_id' | 'account_id' | 'agent_id' | 'context' | 'started_by'>): Promise<RunRow> {
    const rows = await q.query<RunRow>(
      `INSERT INTO agents.runs (id, thread_id, account_id, agent_id, status, context, started_by)
       VALUES ($1, $2, $3, $4, 'queued', $5::jsonb, $6::jsonb) RETURNING *`,
      [r.id, r.thread_id, r.account_id, r.agent_id, JSON.stringify(r.context), JSON.stringify(r.started_by)],
    );
    return runRow(rows[0]!);
  }

  async run(id: string, q: Queryable = this.sql, lock = false): Promise<RunRow | null> {
    const rows = await q.query<RunRow>(`SELECT * FROM agents.runs WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
    return rows[0] ? runRow(rows[0]) : null;
  }

  async activeRun(threadId: string, q: Queryable = this.sql): Promise<RunRow | null> {
    const rows = await q.query<RunRow>(`SELECT * FROM agents.runs WHERE thread_id = $1 AND status IN ('queued', 'running')`, [threadId]);
    return rows[0] ? runRow(rows[0]) : null;
  }

  /**
   * Takes the run for `worker` until now + leaseMs: when it is not finished and nobody else holds a
   * live lease on it. Null when it cannot be taken.
   */
  async claimRun(id: string, worker: string, leaseMs: number): Promise<RunRow | null> {
    const rows = await this.sql.query<RunRow>(
      `UPDATE agents.runs SET status = 'running', worker = $2, lease_until = now() + ($3::int * interval '1 millisecond'),
          started_at = COALESCE(started_at, now())
        WHERE id = $1 AND status IN ('queued', 'running') AND waiting_for IS NULL AND (lease_until IS NULL OR lease_until < now() OR worker = $2)
        RETURNING *`,
      [id, worker, leaseMs],
    );
    return rows[0] ? runRow(rows[0]) : null;
  }

  /** Extends the lease, answering whether a cancel was asked for; null when the run is no longer this worker's (or is finished). */
  async renewLease(q: Queryable, id: string, worker: string, leaseMs: number): Promise<{ cancelRequested: boolean } | null> {
    const rows = await q.query<{ cancel_requested: boolean }>(
      `UPDATE agents.runs SET lease_until = now() + ($3::int * interval '1 millisecond') WHERE id = $1 AND worker = $2 AND status = 'running'
        RETURNING cancel_requested`,
      [id, worker, leaseMs],
    );
    return rows[0] ? { cancelRequested: rows[0].cancel_requested } : null;
  }

  /**
   * Locks the run's thread (its row, as every writer of the thread does first) and answers who holds
   * the run and its status: what the runtime checks before each write. Null when the thread is deleted.
   */
  async lockForRun(q: Queryable, threadId: string, runId: string): Promise<{ status: RunRow['status']; worker: string | null } | null> {
    const rows = await q.query<{ status: RunRow['status']; worker: string | null }>(
      `SELECT r.status, r.worker FROM agents.threads t JOIN agents.runs r ON r.id = $2 AND r.thread_id = t.id
        WHERE t.id = $1 AND t.deleted_at IS NULL FOR UPDATE OF t`,
      [threadId, runId],
    );
    return rows[0] ?? null;
  }

  async checkpoint(
    q: Queryable,
    id: string,
    c: { step: number; context: ContextMessage[]; inputTokens: number; outputTokens: number; cost: string },
  ): Promise<void> {
    await q.query(
      `UPDATE agents.runs SET step = $2, context = $3::jsonb, input_tokens = input_tokens + $4, output_tokens = output_tokens + $5,
          cost = cost + $6::numeric WHERE id = $1`,
      [id, c.step, JSON.stringify(c.context), c.inputTokens, c.outputTokens, c.cost],
    );
  }

  async finishRun(q: Queryable, id: string, status: 'completed' | 'failed' | 'cancelled', error: { code: string; message: string } | null) {
    const rows = await q.query<RunRow>(
      `UPDATE agents.runs SET status = $2, error = $3::jsonb, ended_at = now(), lease_until = NULL, waiting_for = NULL
        WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
      [id, status, error ? JSON.stringify(error) : null],
    );
    return rows[0] ? runRow(rows[0]) : null;
  }

  /**
   * Ends a run as rolled back (docs/threads.md, "Rollback"): cancelled, `rolled_back`, its context
   * left out of the thread's conversation. Null when it had already ended.
   */
  async rollBackRun(q: Queryable, id: string, seq: number): Promise<RunRow | null> {
    const rows = await q.query<RunRow>(
      `UPDATE agents.runs SET status = 'cancelled', error = $2::jsonb, ended_at = now(), lease_until = NULL, cancel_requested = true,
          rolled_back_seq = $3, waiting_for = NULL
        WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
      [id, JSON.stringify({ code: 'rolled_back', message: 'A new message rolled the run back (mode rollback).' }), seq],
    );
    return rows[0] ? runRow(rows[0]) : null;
  }

  /** The first and last seq of a run's events (those carrying its runId). */
  async runSpan(q: Queryable, threadId: string, runId: string): Promise<{ from: number; to: number } | null> {
    const rows = await q.query<{ from: string | null; to: string | null }>(
      `SELECT min(seq) AS from, max(seq) AS to FROM agents.thread_events WHERE thread_id = $1 AND run_id = $2`,
      [threadId, runId],
    );
    return rows[0]?.from ? { from: Number(rows[0].from), to: Number(rows[0].to) } : null;
  }

  /**
   * A rolled-back run's messages out of the conversation: the ones that started it, were delivered
   * to it or were waiting for it (`rolled_back`); the ones queued for after it stay queued.
   */
  async discardRunMessages(q: Queryable, threadId: string, runId: string): Promise<string[]> {
    const rows = await q.query<{ id: string }>(
      `UPDATE agents.thread_inbox SET status = 'rolled_back' WHERE thread_id = $1 AND run_id = $2 AND status IN ('started', 'delivered', 'pending')
        RETURNING id, created_at`,
      [threadId, runId],
    );
    return rows.map((r) => r.id);
  }

  /** The thread's runs rolled back at or before a seq (all of them without one). */
  async rolledBackRuns(threadId: string, uptoSeq?: number): Promise<Set<string>> {
    const rows = await this.sql.query<{ id: string }>(
      `SELECT id FROM agents.runs WHERE thread_id = $1 AND rolled_back_seq IS NOT NULL AND ($2::bigint IS NULL OR rolled_back_seq <= $2)`,
      [threadId, uptoSeq ?? null],
    );
    return new Set(rows.map((r) => r.id));
  }

  async requestCancel(q: Queryable, id: string): Promise<void> {
    await q.query(`UPDATE agents.runs SET cancel_requested = true WHERE id = $1`, [id]);
  }

  /** Adds a message to the inbox; null when the client's message id was already used (the earlier row wins). */
  async insertInbox(
    q: Queryable,
    m: Pick<InboxRow, 'id' | 'thread_id' | 'client_message_id' | 'content' | 'mode' | 'status' | 'run_id' | 'producer'>,
  ): Promise<InboxRow | null> {
    const rows = await q.query<InboxRow>(
      `INSERT INTO agents.thread_inbox (id, thread_id, client_message_id, content, mode, status, run_id, producer)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) ON CONFLICT (thread_id, client_message_id) DO NOTHING RETURNING *`,
      [m.id, m.thread_id, m.client_message_id, m.content, m.mode, m.status, m.run_id, JSON.stringify(m.producer)],
    );
    return rows[0] ? inboxRow(rows[0]) : null;
  }

  /** The message sent under a client's message id, if any. */
  /** The seq of the event that took each message into the thread (message.created or message.injected). */
  async messageSeqs(q: Queryable, threadId: string, messageIds: string[]): Promise<Map<string, number>> {
    if (!messageIds.length) return new Map();
    const rows = await q.query<{ id: string; seq: string | number }>(
      `SELECT data->>'messageId' AS id, min(seq) AS seq FROM agents.thread_events
        WHERE thread_id = $1 AND type IN ('message.created', 'message.injected') AND data->>'messageId' = ANY($2::text[])
        GROUP BY 1`,
      [threadId, messageIds],
    );
    return new Map(rows.map((r) => [r.id, Number(r.seq)]));
  }

  async inboxByClientId(q: Queryable, threadId: string, clientMessageId: string): Promise<InboxRow | null> {
    const rows = await q.query<InboxRow>(`SELECT * FROM agents.thread_inbox WHERE thread_id = $1 AND client_message_id = $2`, [
      threadId,
      clientMessageId,
    ]);
    return rows[0] ? inboxRow(rows[0]) : null;
  }

  /** Locks the thread's row (deleted or not) in the caller's transaction; whether it is live. */
  async lockThread(q: Queryable, id: string): Promise<boolean> {
    const rows = await q.query<{ live: boolean }>(`SELECT deleted_at IS NULL AS live FROM agents.threads WHERE id = $1 FOR UPDATE`, [id]);
    return rows[0]?.live === true;
  }

  /**
   * The model context of the thread's last finished run that was not rolled back: the conversation
   * so far (a fork's base context until its first run finishes).
   */
  async lastContext(q: Queryable, threadId: string): Promise<ContextMessage[]> {
    const rows = await q.query<{ context: ContextMessage[] | string }>(
      `SELECT context FROM (
         SELECT context, 0 AS o FROM (SELECT context FROM agents.runs WHERE thread_id = $1 AND status NOT IN ('queued', 'running')
           AND rolled_back_seq IS NULL ORDER BY created_at DESC, id DESC LIMIT 1) r
         UNION ALL SELECT base_context, 1 FROM agents.threads WHERE id = $1 AND base_context IS NOT NULL) c ORDER BY o LIMIT 1`,
      [threadId],
    );
    return rows[0] ? json(rows[0].context) : [];
  }

  /** Messages waiting for a run (`pending`: the running one; `queued`: a run after it), oldest first. */
  async waiting(q: Queryable, threadId: string, status: 'pending' | 'queued'): Promise<InboxRow[]> {
    const rows = await q.query<InboxRow>(
      `SELECT * FROM agents.thread_inbox WHERE thread_id = $1 AND status = $2 ORDER BY created_at, id FOR UPDATE`,
      [threadId, status],
    );
    return rows.map(inboxRow);
  }

  async markInbox(q: Queryable, ids: string[], status: InboxRow['status'], runId: string, step: number | null): Promise<void> {
    if (!ids.length) return;
    await q.query(
      `UPDATE agents.thread_inbox SET status = $2, run_id = $3, delivered_step = $4, delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
        WHERE id = ANY($1::text[])`,
      [ids, status, runId, step],
    );
  }

  async toolCall(runId: string, callId: string): Promise<ToolCallRow | null> {
    const rows = await this.sql.query<ToolCallRow>(`SELECT * FROM agents.tool_calls WHERE run_id = $1 AND call_id = $2`, [runId, callId]);
    return rows[0] ?? null;
  }

  /** Records a tool call before it runs; false when it was already recorded (a retried step). */
  async startToolCall(r: Pick<ToolCallRow, 'run_id' | 'call_id' | 'step' | 'name' | 'arguments'>, q: Queryable = this.sql): Promise<boolean> {
    const rows = await q.query(
      `INSERT INTO agents.tool_calls (run_id, call_id, step, name, arguments, status) VALUES ($1, $2, $3, $4, $5::jsonb, 'started')
       ON CONFLICT DO NOTHING RETURNING run_id`,
      [r.run_id, r.call_id, r.step, r.name, JSON.stringify(r.arguments ?? null)],
    );
    return rows.length > 0;
  }

  /** Records a call's result once: false when it already had one (another worker's, after a takeover). */
  async finishToolCall(q: Queryable, runId: string, callId: string, result: unknown, isError: boolean, aborted = false): Promise<boolean> {
    const rows = await q.query(
      `UPDATE agents.tool_calls SET status = 'done', result = $3::jsonb, is_error = $4, aborted = $5, finished_at = now()
        WHERE run_id = $1 AND call_id = $2 AND status = 'started' RETURNING call_id`,
      [runId, callId, JSON.stringify(result ?? null), isError, aborted],
    );
    return rows.length > 0;
  }
}
