import { z } from 'zod';

import type { agents_tasks } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, type Route, type RouteInput, routeWith, Timestamp } from '../../route.js';

/**
 * Tasks (docs/memory.md): to-do lists the acting account's people and agents share: tasks with
 * priorities, due times, assignee agents, labels, blockers, comments and an activity log.
 */

export const TaskListId = prefixedId('tls', 'a task list id');
export const TaskId = prefixedId('tsk', 'a task id');
const CommentId = prefixedId('tcm', 'a comment id');
const CommentBody = z.string().min(1).max(10_000).describe('The comment’s text (1–10,000 characters).');
const Priority = z.enum(['low', 'normal', 'high', 'urgent']).describe('How urgent the task is.');
const Labels = z
  .array(z.string().regex(/^[a-z0-9][a-z0-9:_-]{0,49}$/, 'must be 1–50 of a-z 0-9 : _ -'))
  .max(20)
  .describe('Up to 20 labels (a-z 0-9 : _ -).');

export const TaskList = z
  .object({
    id: z.string(),
    name: z.string(),
    description: Nullable(z.string()),
    openTasks: z.number().int(),
    doneTasks: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'TaskList' });

export const Task = z
  .object({
    id: z.string(),
    listId: z.string(),
    title: z.string(),
    notes: Nullable(z.string()),
    status: z.enum(['open', 'done']),
    priority: Priority,
    dueAt: Nullable(Timestamp),
    assigneeAgentId: Nullable(z.string()),
    labels: z.array(z.string()),
    position: z.number().describe('Its place in its list (ascending).'),
    blockedBy: z.array(z.string()).describe('Tasks that must be done before this one can be completed.'),
    completedAt: Nullable(Timestamp),
    comments: z.number().int().describe('How many comments it has.'),
    createdBy: z.record(z.string(), z.unknown()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Task' });

const TaskComment = z
  .object({
    id: z.string(),
    taskId: z.string(),
    body: z.string(),
    author: z.record(z.string(), z.unknown()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'TaskComment' });

export const listJson = (l: agents_tasks.TaskList) => ({ ...l, description: l.description ?? null });
export const taskJson = (t: agents_tasks.Task) => ({
  id: t.id,
  listId: t.listId,
  title: t.title,
  notes: t.notes ?? null,
  status: t.status as 'open' | 'done',
  priority: t.priority as z.infer<typeof Priority>,
  dueAt: t.dueAt ?? null,
  assigneeAgentId: t.assigneeAgentId ?? null,
  labels: t.labels,
  position: t.position,
  blockedBy: t.blockedBy,
  completedAt: t.completedAt ?? null,
  comments: t.comments,
  createdBy: JSON.parse(t.createdByJson || '{}') as Record<string, unknown>,
  createdAt: t.createdAt,
  updatedAt: t.updatedAt,
});
const commentJson = (c: agents_tasks.TaskComment) => ({
  id: c.id,
  taskId: c.taskId,
  body: c.body,
  author: JSON.parse(c.authorJson || '{}') as Record<string, unknown>,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

const TaskPage = z.object({ tasks: z.array(Task), nextCursor: Nullable(z.string()) }).meta({ id: 'TaskPage' });
export const Deleted = (what: string) => z.object({ deleted: z.number().int().describe(`How many ${what} were deleted.`) });

export const listParams = z.object({ id: TaskListId });
const taskParams = z.object({ id: TaskId });
const commentParams = z.object({ id: TaskId, commentId: CommentId });
const byId = (i: RouteInput<{ id: string }>) => ({ id: i.params.id });
export const oneList = (res: agents_tasks.TaskListResponse) => listJson(res.list!);
const oneTask = (res: agents_tasks.TaskResponse) => taskJson(res.task!);

const base: Pick<Route, 'tag' | 'auth' | 'principals' | 'authority'> = {
  tag: 'tasks',
  auth: 'key',
  principals: ['human', 'agent'],
  authority: false,
};
export const taskRoute = routeWith(base);

export const tasksRoutes: Route[] = [
  taskRoute({
    id: 'tasks.list',
    method: 'get',
    path: '/tasks',
    summary: 'Tasks across the account’s lists (or of one), filtered by status, assignee, label, text or due time; by list and position.',
    query: ListQuery.extend({
      listId: TaskListId.optional(),
      status: z.enum(['open', 'done']).optional().describe('Only open or only done tasks.'),
      assigneeAgentId: AgentId.optional(),
      label: z.string().max(50).optional().describe('Only tasks with this label.'),
      q: z.string().min(1).max(200).optional().describe('Text in the title or notes.'),
      dueBefore: z.iso.datetime({ offset: true }).optional().describe('Only tasks due before this time.'),
    }),
    response: TaskPage,
    handler: {
      rpc: 'agents.listTasks',
      request: (i) => ({
        listId: i.query.listId,
        status: i.query.status,
        assigneeAgentId: i.query.assigneeAgentId,
        label: i.query.label,
        query: i.query.q,
        dueBefore: i.query.dueBefore,
        limit: i.query.limit,
        cursor: i.query.cursor,
      }),
      response: (res) => ({ tasks: res.tasks.map(taskJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  taskRoute({
    id: 'tasks.create',
    method: 'post',
    effect: 'creates',
    path: '/tasks',
    summary: 'Add a task at the end of a list, with optional notes, priority, due time, assignee agent and labels. Returns the task.',
    errors: ['task_list_not_found'],
    body: z
      .object({
        listId: TaskListId,
        title: z.string().min(1).max(300).describe('What is to be done (1–300 characters).'),
        notes: z.string().max(10_000).optional().describe('Details, as free text (at most 10,000 characters).'),
        priority: Priority.optional().describe('Default normal.'),
        dueAt: z.iso.datetime({ offset: true }).optional().describe('When it is due (ISO 8601).'),
        assigneeAgentId: AgentId.optional().describe('An agent of the account.'),
        labels: Labels.optional(),
      })
      .strict()
      .meta({ id: 'CreateTaskRequest' }),
    response: Task,
    status: 201,
    handler: {
      rpc: 'agents.createTask',
      request: (i) => ({
        listId: i.body.listId,
        title: i.body.title,
        notes: i.body.notes,
        priority: i.body.priority,
        dueAt: i.body.dueAt,
        assigneeAgentId: i.body.assigneeAgentId,
        labels: i.body.labels ?? [],
      }),
      response: oneTask,
    },
  }),
  taskRoute({
    id: 'tasks.duplicate',
    method: 'post',
    effect: 'creates',
    path: '/tasks/:id/duplicate',
    summary:
      'Copy a task (open, with its notes, priority, due time, assignee and labels; no blockers or comments) to the end of its list or another.',
    errors: ['task_not_found'],
    params: taskParams,
    body: z
      .object({
        listId: TaskListId.optional().describe('Default: its own list.'),
        title: z.string().min(1).max(300).optional().describe('The copy’s title (default: the same title).'),
      })
      .strict()
      .meta({ id: 'DuplicateTaskRequest' }),
    response: Task,
    status: 201,
    handler: {
      rpc: 'agents.duplicateTask',
      request: (i) => ({ id: i.params.id, listId: i.body.listId, title: i.body.title }),
      response: oneTask,
    },
  }),
  taskRoute({
    id: 'tasks.get',
    method: 'get',
    path: '/tasks/:id',
    summary: 'A task with its blockers and comment count.',
    errors: ['task_not_found'],
    params: taskParams,
    response: Task,
    handler: { rpc: 'agents.getTask', request: byId, response: oneTask },
  }),
  taskRoute({
    id: 'tasks.update',
    method: 'patch',
    effect: 'updates',
    path: '/tasks/:id',
    summary: 'Change a task’s title, notes, priority, due time or labels (null clears notes or due time).',
    errors: ['task_not_found'],
    params: taskParams,
    body: z
      .object({
        title: z.string().min(1).max(300).optional().describe('What is to be done (1–300 characters).'),
        notes: z.string().max(10_000).nullable().optional().describe('Details, as free text; null clears them.'),
        priority: Priority.optional(),
        dueAt: z.iso.datetime({ offset: true }).nullable().optional().describe('When it is due (ISO 8601); null clears it.'),
        labels: Labels.optional().describe('Replaces the labels.'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
      .meta({ id: 'UpdateTaskRequest' }),
    response: Task,
    handler: {
      rpc: 'agents.updateTask',
      request: (i) => ({
        id: i.params.id,
        title: i.body.title,
        notes: i.body.notes ?? undefined,
        clearNotes: i.body.notes === null,
        priority: i.body.priority,
        dueAt: i.body.dueAt ?? undefined,
        clearDueAt: i.body.dueAt === null,
        labels: i.body.labels ?? [],
        hasLabels: i.body.labels !== undefined,
      }),
      response: oneTask,
    },
  }),
  taskRoute({
    id: 'tasks.delete',
    method: 'delete',
    path: '/tasks/:id',
    summary: 'Delete a task (idempotent); tasks waiting for it no longer do.',
    errors: ['task_not_found'],
    params: taskParams,
    response: Deleted('tasks').meta({ id: 'DeletedTask' }),
    handler: { rpc: 'agents.deleteTask', request: byId, response: (res) => ({ deleted: res.count }) },
  }),
  taskRoute({
    id: 'tasks.complete',
    method: 'post',
    effect: 'updates',
    path: '/tasks/:id/complete',
    summary: 'Mark a task done (409 task_blocked while a task it waits for is open; done already: unchanged).',
    errors: ['task_blocked', 'task_not_found'],
    params: taskParams,
    response: Task,
    handler: { rpc: 'agents.completeTask', request: byId, response: oneTask },
  }),
  taskRoute({
    id: 'tasks.reopen',
    method: 'post',
    effect: 'updates',
    path: '/tasks/:id/reopen',
    summary: 'Mark a done task open again (the opposite of completing it). Returns the task.',
    errors: ['task_not_found'],
    params: taskParams,
    response: Task,
    handler: { rpc: 'agents.reopenTask', request: byId, response: oneTask },
  }),
  taskRoute({
    id: 'tasks.assign',
    method: 'put',
    effect: 'updates',
    path: '/tasks/:id/assignee',
    summary: 'Assign a task to an agent of the account, or unassign it (null).',
    errors: ['agent_not_found', 'task_not_found'],
    params: taskParams,
    body: z
      .object({ agentId: AgentId.nullable().describe('The agent; null unassigns.') })
      .strict()
      .meta({ id: 'AssignTaskRequest' }),
    response: Task,
    handler: { rpc: 'agents.assignTask', request: (i) => ({ id: i.params.id, agentId: i.body.agentId ?? undefined }), response: oneTask },
  }),
  taskRoute({
    id: 'tasks.move',
    method: 'post',
    effect: 'updates',
    path: '/tasks/:id/move',
    summary: 'Move a task to another list and/or place it before another task (default: the end of the list).',
    errors: ['task_not_found', 'task_not_in_list'],
    params: taskParams,
    body: z
      .object({
        listId: TaskListId.optional().describe('The target list (default: its own, or beforeTaskId’s).'),
        beforeTaskId: TaskId.optional().describe('Place it just before this task of the target list.'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must give listId or beforeTaskId')
      .meta({ id: 'MoveTaskRequest' }),
    response: Task,
    handler: {
      rpc: 'agents.moveTask',
      request: (i) => ({ id: i.params.id, listId: i.body.listId, beforeTaskId: i.body.beforeTaskId }),
      response: oneTask,
    },
  }),
  taskRoute({
    id: 'tasks.blockers.add',
    statuses: { 409: 'The blocker already waits, directly or not, for the task (`dependency_cycle`).' },
    method: 'put',
    effect: 'creates',
    path: '/tasks/:id/blockers/:blockerId',
    summary: 'Make a task wait for another one (it cannot be completed before); 409 dependency_cycle for a loop.',
    errors: ['dependency_cycle', 'task_not_found'],
    params: z.object({ id: TaskId, blockerId: TaskId.describe('The task to wait for.') }),
    response: Task,
    handler: { rpc: 'agents.addTaskBlocker', request: (i) => ({ id: i.params.id, blockerId: i.params.blockerId }), response: oneTask },
  }),
  taskRoute({
    id: 'tasks.blockers.remove',
    method: 'delete',
    path: '/tasks/:id/blockers/:blockerId',
    summary: 'Stop a task waiting for another one (idempotent).',
    errors: ['task_not_found'],
    params: z.object({ id: TaskId, blockerId: TaskId }),
    response: Task,
    handler: { rpc: 'agents.removeTaskBlocker', request: (i) => ({ id: i.params.id, blockerId: i.params.blockerId }), response: oneTask },
  }),
  taskRoute({
    id: 'tasks.activity',
    method: 'get',
    path: '/tasks/:id/activity',
    summary: 'A task’s activity log, oldest first: created, updated (the changed fields), completed, reopened, assigned, moved, blockers, comments.',
    errors: ['task_not_found'],
    params: taskParams,
    query: ListQuery,
    response: z
      .object({
        activity: z.array(
          z.object({ type: z.string(), data: z.record(z.string(), z.unknown()), actor: z.record(z.string(), z.unknown()), at: Timestamp }),
        ),
        nextCursor: Nullable(z.string()),
      })
      .meta({ id: 'TaskActivity' }),
    handler: {
      rpc: 'agents.taskActivityLog',
      request: (i) => ({ taskId: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({
        activity: res.activity.map((a) => ({
          type: a.type,
          data: JSON.parse(a.dataJson) as Record<string, unknown>,
          actor: JSON.parse(a.actorJson) as Record<string, unknown>,
          at: a.at,
        })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  taskRoute({
    id: 'tasks.comments.list',
    method: 'get',
    path: '/tasks/:id/comments',
    summary: 'A task’s comments, oldest first, each with its author and when it was written or edited.',
    errors: ['task_not_found'],
    params: taskParams,
    query: ListQuery,
    response: z.object({ comments: z.array(TaskComment), nextCursor: Nullable(z.string()) }).meta({ id: 'TaskCommentList' }),
    handler: {
      rpc: 'agents.listTaskComments',
      request: (i) => ({ taskId: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ comments: res.comments.map(commentJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  taskRoute({
    id: 'tasks.comments.create',
    method: 'post',
    effect: 'creates',
    path: '/tasks/:id/comments',
    summary: 'Comment on a task (a note, a progress report, a question).',
    errors: ['task_not_found'],
    params: taskParams,
    body: z.object({ body: CommentBody }).strict().meta({ id: 'CreateTaskCommentRequest' }),
    response: TaskComment,
    status: 201,
    handler: {
      rpc: 'agents.createTaskComment',
      request: (i) => ({ taskId: i.params.id, body: i.body.body }),
      response: (res) => commentJson(res.comment!),
    },
  }),
  taskRoute({
    id: 'tasks.comments.update',
    method: 'patch',
    effect: 'updates',
    path: '/tasks/:id/comments/:commentId',
    summary: 'Edit a comment you wrote (403 not_comment_author for another’s).',
    errors: ['not_comment_author', 'task_not_found'],
    params: commentParams,
    body: z.object({ body: CommentBody }).strict().meta({ id: 'UpdateTaskCommentRequest' }),
    response: TaskComment,
    handler: {
      rpc: 'agents.updateTaskComment',
      request: (i) => ({ taskId: i.params.id, commentId: i.params.commentId, body: i.body.body }),
      response: (res) => commentJson(res.comment!),
    },
  }),
  taskRoute({
    id: 'tasks.comments.delete',
    method: 'delete',
    path: '/tasks/:id/comments/:commentId',
    summary: 'Delete a comment you wrote (idempotent).',
    errors: ['task_not_found'],
    params: commentParams,
    response: Deleted('comments').meta({ id: 'DeletedTaskComment' }),
    handler: {
      rpc: 'agents.deleteTaskComment',
      request: (i) => ({ taskId: i.params.id, commentId: i.params.commentId }),
      response: (res) => ({ deleted: res.count }),
    },
  }),
];
