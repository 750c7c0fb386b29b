import { type Actor, containsText, type Queryable, type Sql } from '@svc/kit';

/** SQL for task lists, tasks, comments and activity (docs/memory.md). Rules live in tasks.ts. */

export interface TaskListRow {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  open_tasks: number;
  done_tasks: number;
  created_at: Date;
  updated_at: Date;
}

export interface TaskRow {
  id: string;
  account_id: string;
  list_id: string;
  title: string;
  notes: string | null;
  status: 'open' | 'done';
  priority: string;
  due_at: Date | null;
  assignee_agent_id: string | null;
  labels: string[];
  position: number;
  blocked_by: string[];
  completed_at: Date | null;
  comments: number;
  created_by: Actor;
  created_at: Date;
  updated_at: Date;
}

export interface CommentRow {
  id: string;
  task_id: string;
  body: string;
  author: Actor;
  created_at: Date;
  updated_at: Date;
}

export interface ActivityRow {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  actor: Actor;
  at: Date;
}

export type TaskFields = Pick<TaskRow, 'title' | 'notes' | 'priority' | 'due_at' | 'labels'>;

const LIST_COLUMNS = `l.*,
  (SELECT COUNT(*)::int FROM agents.tasks t WHERE t.list_id = l.id AND t.status = 'open') AS open_tasks,
  (SELECT COUNT(*)::int FROM agents.tasks t WHERE t.list_id = l.id AND t.status = 'done') AS done_tasks`;
const TASK_COLUMNS = `t.*, (SELECT COUNT(*)::int FROM agents.task_comments c WHERE c.task_id = t.id) AS comments`;
const PRIORITY_RANK = `CASE t.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END`;

export interface TaskFilter {
  accountId: string;
  listId?: string;
  status?: string;
  assignee?: string;
  label?: string;
  text?: string;
  dueBefore?: Date;
  offset: number;
  limit: number;
}

export class TaskStore {
  constructor(readonly sql: Sql) {}

  async insertList(q: Queryable, l: { id: string; account_id: string; name: string; description: string | null; created_by: Actor }) {
    await q.query(`INSERT INTO agents.task_lists (id, account_id, name, description, created_by) VALUES ($1, $2, $3, $4, $5::jsonb)`, [
      l.id,
      l.account_id,
      l.name,
      l.description,
      JSON.stringify(l.created_by),
    ]);
  }

  async list(id: string, q: Queryable = this.sql, lock = false): Promise<TaskListRow | null> {
    if (lock) await q.query(`SELECT 1 FROM agents.task_lists WHERE id = $1 FOR UPDATE`, [id]);
    const rows = await q.query<TaskListRow>(`SELECT ${LIST_COLUMNS} FROM agents.task_lists l WHERE l.id = $1`, [id]);
    return rows[0] ?? null;
  }

  async lists(accountId: string, after: string, limit: number): Promise<TaskListRow[]> {
    return this.sql.query<TaskListRow>(
      `SELECT ${LIST_COLUMNS} FROM agents.task_lists l WHERE l.account_id = $1 AND l.id > $2 ORDER BY l.id LIMIT $3`,
      [accountId, after, limit],
    );
  }

  async updateList(q: Queryable, id: string, f: { name: string; description: string | null }) {
    await q.query(`UPDATE agents.task_lists SET name = $2, description = $3, updated_at = now() WHERE id = $1`, [id, f.name, f.description]);
  }

  async deleteList(q: Queryable, id: string): Promise<number> {
    const rows = await q.query<{ id: string }>(`DELETE FROM agents.tasks WHERE list_id = $1 RETURNING id`, [id]);
    await q.query(`DELETE FROM agents.task_lists WHERE id = $1`, [id]);
    return rows.length;
  }

  async deleteDone(q: Queryable, listId: string): Promise<string[]> {
    const rows = await q.query<{ id: string }>(`DELETE FROM agents.tasks WHERE list_id = $1 AND status = 'done' RETURNING id`, [listId]);
    return rows.map((r) => r.id);
  }

  /** Removes deleted tasks from every blocker list of the account. */
  async unblock(q: Queryable, accountId: string, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await q.query(
      `UPDATE agents.tasks SET blocked_by = ARRAY(SELECT b FROM unnest(blocked_by) b WHERE NOT b = ANY($2::text[]))
        WHERE account_id = $1 AND blocked_by && $2::text[]`,
      [accountId, ids],
    );
  }

  async maxPosition(q: Queryable, listId: string): Promise<number> {
    const rows = await q.query<{ p: number | null }>(`SELECT MAX(position) AS p FROM agents.tasks WHERE list_id = $1`, [listId]);
    return rows[0]?.p ?? 0;
  }

  /** The position just before `before` in its list (halfway from the previous task). */
  async positionBefore(q: Queryable, listId: string, before: TaskRow): Promise<number> {
    const rows = await q.query<{ p: number | null }>(`SELECT MAX(position) AS p FROM agents.tasks WHERE list_id = $1 AND (position, id) < ($2, $3)`, [
      listId,
      before.position,
      before.id,
    ]);
    const prev = rows[0]?.p ?? before.position - 2;
    return (prev + before.position) / 2;
  }

  async insertTask(
    q: Queryable,
    t: Omit<TaskRow, 'status' | 'completed_at' | 'comments' | 'created_at' | 'updated_at' | 'blocked_by'>,
  ): Promise<void> {
    await q.query(
      `INSERT INTO agents.tasks (id, account_id, list_id, title, notes, priority, due_at, assignee_agent_id, labels, position, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)`,
      [
        t.id,
        t.account_id,
        t.list_id,
        t.title,
        t.notes,
        t.priority,
        t.due_at,
        t.assignee_agent_id,
        t.labels,
        t.position,
        JSON.stringify(t.created_by),
      ],
    );
  }

  async task(id: string, q: Queryable = this.sql, lock = false): Promise<TaskRow | null> {
    if (lock) await q.query(`SELECT 1 FROM agents.tasks WHERE id = $1 FOR UPDATE`, [id]);
    const rows = await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM agents.tasks t WHERE t.id = $1`, [id]);
    return rows[0] ?? null;
  }

  async tasksOf(q: Queryable, accountId: string, ids: string[]): Promise<TaskRow[]> {
    return q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM agents.tasks t WHERE t.account_id = $1 AND t.id = ANY($2::text[])`, [accountId, ids]);
  }

  async tasks(f: TaskFilter): Promise<TaskRow[]> {
    const text = f.text ? containsText(f.text) : null;
    return this.sql.query<TaskRow>(
      `SELECT ${TASK_COLUMNS} FROM agents.tasks t
        WHERE t.account_id = $1 AND ($2::text IS NULL OR t.list_id = $2) AND ($3::text IS NULL OR t.status = $3)
          AND ($4::text IS NULL OR t.assignee_agent_id = $4) AND ($5::text IS NULL OR $5 = ANY(t.labels))
          AND ($6::text IS NULL OR t.title ~* $6 OR t.notes ~* $6) AND ($7::timestamptz IS NULL OR t.due_at < $7)
        ORDER BY t.list_id, t.position, t.id OFFSET $8 LIMIT $9`,
      [f.accountId, f.listId ?? null, f.status ?? null, f.assignee ?? null, f.label ?? null, text, f.dueBefore ?? null, f.offset, f.limit],
    );
  }

  async listTasks(q: Queryable, listId: string): Promise<TaskRow[]> {
    return q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM agents.tasks t WHERE t.list_id = $1 ORDER BY t.position, t.id`, [listId]);
  }

  /** The next task to work on: open, no open blocker; by priority, then due time, then position. */
  async next(listId: string): Promise<TaskRow | null> {
    const rows = await this.sql.query<TaskRow>(
      `SELECT ${TASK_COLUMNS} FROM agents.tasks t
        WHERE t.list_id = $1 AND t.status = 'open'
          AND NOT EXISTS (SELECT 1 FROM agents.tasks b WHERE b.id = ANY(t.blocked_by) AND b.status = 'open')
        ORDER BY ${PRIORITY_RANK}, t.due_at ASC NULLS LAST, t.position, t.id LIMIT 1`,
      [listId],
    );
    return rows[0] ?? null;
  }

  async openBlockers(q: Queryable, task: TaskRow): Promise<string[]> {
    const rows = await q.query<{ id: string }>(`SELECT id FROM agents.tasks WHERE id = ANY($1::text[]) AND status = 'open' ORDER BY id`, [
      task.blocked_by,
    ]);
    return rows.map((r) => r.id);
  }

  async updateFields(q: Queryable, id: string, f: TaskFields): Promise<void> {
    await q.query(`UPDATE agents.tasks SET title = $2, notes = $3, priority = $4, due_at = $5, labels = $6, updated_at = now() WHERE id = $1`, [
      id,
      f.title,
      f.notes,
      f.priority,
      f.due_at,
      f.labels,
    ]);
  }

  async setStatus(q: Queryable, id: string, status: 'open' | 'done'): Promise<void> {
    await q.query(
      `UPDATE agents.tasks SET status = $2, completed_at = CASE WHEN $2 = 'done' THEN now() ELSE NULL END, updated_at = now() WHERE id = $1`,
      [id, status],
    );
  }

  async setAssignee(q: Queryable, id: string, agentId: string | null): Promise<void> {
    await q.query(`UPDATE agents.tasks SET assignee_agent_id = $2, updated_at = now() WHERE id = $1`, [id, agentId]);
  }

  async setPlace(q: Queryable, id: string, listId: string, position: number): Promise<void> {
    await q.query(`UPDATE agents.tasks SET list_id = $2, position = $3, updated_at = now() WHERE id = $1`, [id, listId, position]);
  }

  async setBlockers(q: Queryable, id: string, blockers: string[]): Promise<void> {
    await q.query(`UPDATE agents.tasks SET blocked_by = $2, updated_at = now() WHERE id = $1`, [id, blockers]);
  }

  /** Every task that `id` transitively waits for (its blockers, theirs...). */
  async upstream(q: Queryable, id: string): Promise<string[]> {
    const rows = await q.query<{ id: string }>(
      `WITH RECURSIVE up(id) AS (
         SELECT unnest(blocked_by) FROM agents.tasks WHERE id = $1
         UNION SELECT unnest(t.blocked_by) FROM agents.tasks t JOIN up ON t.id = up.id)
       SELECT id FROM up`,
      [id],
    );
    return rows.map((r) => r.id);
  }

  async deleteTask(q: Queryable, id: string): Promise<void> {
    await q.query(`DELETE FROM agents.tasks WHERE id = $1`, [id]);
  }

  async activity(q: Queryable, taskId: string, type: string, data: Record<string, unknown>, actor: Actor): Promise<void> {
    await q.query(`INSERT INTO agents.task_activity (task_id, type, data, actor) VALUES ($1, $2, $3::jsonb, $4::jsonb)`, [
      taskId,
      type,
      JSON.stringify(data),
      JSON.stringify(actor),
    ]);
  }

  async activityOf(taskId: string, after: number, limit: number): Promise<ActivityRow[]> {
    return this.sql.query<ActivityRow>(`SELECT * FROM agents.task_activity WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
      taskId,
      after,
      limit,
    ]);
  }

  async insertComment(q: Queryable, c: { id: string; task_id: string; body: string; author: Actor }): Promise<CommentRow> {
    const rows = await q.query<CommentRow>(
      `INSERT INTO agents.task_comments (id, task_id, body, author) VALUES ($1, $2, $3, $4::jsonb) RETURNING *`,
      [c.id, c.task_id, c.body, JSON.stringify(c.author)],
    );
    return rows[0]!;
  }

  async comment(q: Queryable, taskId: string, id: string): Promise<CommentRow | null> {
    const rows = await q.query<CommentRow>(`SELECT * FROM agents.task_comments WHERE task_id = $1 AND id = $2`, [taskId, id]);
    return rows[0] ?? null;
  }

  async comments(taskId: string, after: string, limit: number): Promise<CommentRow[]> {
    return this.sql.query<CommentRow>(`SELECT * FROM agents.task_comments WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [
      taskId,
      after,
      limit,
    ]);
  }

  async updateComment(q: Queryable, id: string, body: string): Promise<CommentRow> {
    const rows = await q.query<CommentRow>(`UPDATE agents.task_comments SET body = $2, updated_at = now() WHERE id = $1 RETURNING *`, [id, body]);
    return rows[0]!;
  }

  async deleteComment(q: Queryable, id: string): Promise<void> {
    await q.query(`DELETE FROM agents.task_comments WHERE id = $1`, [id]);
  }
}
