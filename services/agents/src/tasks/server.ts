import type { Handlers } from '@svc/kit';
import type { agents_tasks } from '@svc/proto';

import { TaskComments } from './comments.js';
import { TaskLists } from './lists.js';
import type { CommentRow, TaskListRow, TaskRow } from './store.js';
import type { TasksDomain } from './tasks.js';

type Def = typeof agents_tasks.TasksServiceService;
type TaskHandlers = Pick<
  Handlers<Def>,
  | 'listTaskLists'
  | 'createTaskList'
  | 'getTaskList'
  | 'updateTaskList'
  | 'deleteTaskList'
  | 'clearCompletedTasks'
  | 'reorderTaskList'
  | 'nextTask'
  | 'listTasks'
  | 'createTask'
  | 'getTask'
  | 'updateTask'
  | 'deleteTask'
  | 'completeTask'
  | 'reopenTask'
  | 'assignTask'
  | 'moveTask'
  | 'addTaskBlocker'
  | 'removeTaskBlocker'
  | 'listTaskComments'
  | 'createTaskComment'
  | 'updateTaskComment'
  | 'deleteTaskComment'
  | 'taskActivityLog'
  | 'duplicateTask'
  | 'duplicateTaskList'
>;

export function toList(l: TaskListRow): agents_tasks.TaskList {
  return {
    id: l.id,
    name: l.name,
    description: l.description ?? undefined,
    openTasks: l.open_tasks,
    doneTasks: l.done_tasks,
    createdAt: l.created_at.toISOString(),
    updatedAt: l.updated_at.toISOString(),
  };
}

export function toTask(t: TaskRow): agents_tasks.Task {
  return {
    id: t.id,
    listId: t.list_id,
    title: t.title,
    notes: t.notes ?? undefined,
    status: t.status,
    priority: t.priority,
    dueAt: t.due_at?.toISOString(),
    assigneeAgentId: t.assignee_agent_id ?? undefined,
    labels: t.labels,
    position: t.position,
    blockedBy: t.blocked_by,
    completedAt: t.completed_at?.toISOString(),
    comments: t.comments,
    createdByJson: JSON.stringify(t.created_by),
    createdAt: t.created_at.toISOString(),
    updatedAt: t.updated_at.toISOString(),
  };
}

const toComment = (c: CommentRow): agents_tasks.TaskComment => ({
  id: c.id,
  taskId: c.task_id,
  body: c.body,
  authorJson: JSON.stringify(c.author),
  createdAt: c.created_at.toISOString(),
  updatedAt: c.updated_at.toISOString(),
});

/** gRPC handlers of tasks: translate messages, let the domain decide. */
export function taskHandlers(d: TasksDomain): TaskHandlers {
  const comments = new TaskComments(d);
  const lists = new TaskLists(d);
  return {
    async listTaskLists(req, { principal }) {
      const { rows, nextCursor } = await lists.lists(principal, req.limit, req.cursor);
      return { lists: rows.map(toList), nextCursor };
    },
    async createTaskList(req, { principal }) {
      return { list: toList(await lists.createList(principal, req)) };
    },
    async getTaskList(req, { principal }) {
      return { list: toList(await d.getList(principal, req.id)) };
    },
    async updateTaskList(req, { principal }) {
      return { list: toList(await lists.updateList(principal, req)) };
    },
    async deleteTaskList(req, { principal }) {
      return { count: await lists.deleteList(principal, req.id) };
    },
    async clearCompletedTasks(req, { principal }) {
      return { count: await lists.clearCompleted(principal, req.id) };
    },
    async reorderTaskList(req, { principal }) {
      return { tasks: (await lists.reorder(principal, req.id, req.taskIds)).map(toTask) };
    },
    async nextTask(req, { principal }) {
      const t = await lists.next(principal, req.id);
      return { task: t ? toTask(t) : undefined };
    },
    async listTasks(req, { principal }) {
      const { rows, nextCursor } = await d.list(principal, req);
      return { tasks: rows.map(toTask), nextCursor };
    },
    async createTask(req, { principal }) {
      return { task: toTask(await d.create(principal, req)) };
    },
    async getTask(req, { principal }) {
      return { task: toTask(await d.get(principal, req.id)) };
    },
    async updateTask(req, { principal }) {
      return { task: toTask(await d.update(principal, req)) };
    },
    async deleteTask(req, { principal }) {
      return { count: await d.remove(principal, req.id) };
    },
    async completeTask(req, { principal }) {
      return { task: toTask(await d.complete(principal, req.id)) };
    },
    async reopenTask(req, { principal }) {
      return { task: toTask(await d.reopen(principal, req.id)) };
    },
    async assignTask(req, { principal }) {
      return { task: toTask(await d.assign(principal, req.id, req.agentId)) };
    },
    async moveTask(req, { principal }) {
      return { task: toTask(await d.move(principal, req)) };
    },
    async addTaskBlocker(req, { principal }) {
      return { task: toTask(await d.addBlocker(principal, req.id, req.blockerId)) };
    },
    async removeTaskBlocker(req, { principal }) {
      return { task: toTask(await d.removeBlocker(principal, req.id, req.blockerId)) };
    },
    async listTaskComments(req, { principal }) {
      const { rows, nextCursor } = await comments.comments(principal, req.taskId, req.limit, req.cursor);
      return { comments: rows.map(toComment), nextCursor };
    },
    async createTaskComment(req, { principal }) {
      return { comment: toComment(await comments.comment(principal, req.taskId, req.body)) };
    },
    async updateTaskComment(req, { principal }) {
      return { comment: toComment(await comments.editComment(principal, req.taskId, req.commentId, req.body)) };
    },
    async deleteTaskComment(req, { principal }) {
      return { count: await comments.deleteComment(principal, req.taskId, req.commentId) };
    },
    async duplicateTask(req, { principal }) {
      return { task: toTask(await d.duplicate(principal, req)) };
    },
    async duplicateTaskList(req, { principal }) {
      return { list: toList(await lists.duplicateList(principal, req)) };
    },
    async taskActivityLog(req, { principal }) {
      const { rows, nextCursor } = await d.activity(principal, req.taskId, req.limit, req.cursor);
      return {
        activity: rows.map((a) => ({ type: a.type, dataJson: JSON.stringify(a.data), actorJson: JSON.stringify(a.actor), at: a.at.toISOString() })),
        nextCursor,
      };
    },
  };
}
