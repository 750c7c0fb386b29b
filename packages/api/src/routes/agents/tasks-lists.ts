import { z } from 'zod';

import { ListQuery, Nullable, type Route, type RouteInput } from '../../route.js';
import { Deleted, listJson, listParams, oneList, Task, TaskId, taskJson, TaskList, taskRoute } from './tasks.js';

/** Task lists (docs/memory.md): create, read, rename, delete, clear, order, the next ready task, duplicate. */

const TaskListList = z.object({ lists: z.array(TaskList), nextCursor: Nullable(z.string()) }).meta({ id: 'TaskListList' });
const byId = (i: RouteInput<{ id: string }>) => ({ id: i.params.id });

export const taskListsRoutes: Route[] = [
  taskRoute({
    id: 'tasks.lists.list',
    method: 'get',
    path: '/task-lists',
    summary: 'The account’s task lists, oldest first, with their open and done counts.',
    query: ListQuery,
    response: TaskListList,
    handler: {
      rpc: 'agents.listTaskLists',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ lists: res.lists.map(listJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  taskRoute({
    id: 'tasks.lists.create',
    method: 'post',
    effect: 'creates',
    path: '/task-lists',
    summary: 'Create a task list (a named list of tasks people and agents share). Returns the list.',
    body: z
      .object({
        name: z.string().min(1).max(100).describe('The list’s name (1–100 characters).'),
        description: z.string().max(1000).optional().describe('What the list is for (at most 1,000 characters).'),
      })
      .strict()
      .meta({ id: 'CreateTaskListRequest' }),
    response: TaskList,
    status: 201,
    handler: { rpc: 'agents.createTaskList', request: (i) => ({ name: i.body.name, description: i.body.description }), response: oneList },
  }),
  taskRoute({
    id: 'tasks.lists.get',
    method: 'get',
    path: '/task-lists/:id',
    summary: 'A task list with its open and done counts.',
    errors: ['task_list_not_found'],
    params: listParams,
    response: TaskList,
    handler: { rpc: 'agents.getTaskList', request: byId, response: oneList },
  }),
  taskRoute({
    id: 'tasks.lists.update',
    method: 'patch',
    effect: 'updates',
    path: '/task-lists/:id',
    summary: 'Rename a task list or change its description (null clears it).',
    errors: ['task_list_not_found'],
    params: listParams,
    body: z
      .object({
        name: z.string().min(1).max(100).optional().describe('The list’s name (1–100 characters).'),
        description: z.string().max(1000).nullable().optional().describe('What the list is for; null clears it.'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
      .meta({ id: 'UpdateTaskListRequest' }),
    response: TaskList,
    handler: {
      rpc: 'agents.updateTaskList',
      request: (i) => ({
        id: i.params.id,
        name: i.body.name,
        description: i.body.description ?? undefined,
        clearDescription: i.body.description === null,
      }),
      response: oneList,
    },
  }),
  taskRoute({
    id: 'tasks.lists.delete',
    method: 'delete',
    path: '/task-lists/:id',
    summary: 'Delete a task list together with all its tasks and their comments; this cannot be undone.',
    errors: ['task_list_not_found'],
    params: listParams,
    response: Deleted('tasks').meta({ id: 'DeletedTaskList' }),
    handler: { rpc: 'agents.deleteTaskList', request: byId, response: (res) => ({ deleted: res.count }) },
  }),
  taskRoute({
    id: 'tasks.lists.clearCompleted',
    method: 'post',
    effect: 'deletes',
    path: '/task-lists/:id/clear-completed',
    summary: 'Delete the done tasks of a list (the open ones stay).',
    errors: ['task_list_not_found'],
    params: listParams,
    response: Deleted('done tasks').meta({ id: 'ClearedTasks' }),
    handler: { rpc: 'agents.clearCompletedTasks', request: byId, response: (res) => ({ deleted: res.count }) },
  }),
  taskRoute({
    id: 'tasks.lists.reorder',
    statuses: { 409: 'taskIds do not name every task of the list exactly once (`order_mismatch`).' },
    method: 'put',
    effect: 'updates',
    path: '/task-lists/:id/order',
    summary: 'Set the order of a list: every task id of the list, once each, in the new order (409 order_mismatch otherwise).',
    errors: ['order_mismatch', 'task_list_not_found'],
    params: listParams,
    body: z
      .object({ taskIds: z.array(TaskId).max(1000).describe('The list’s every task, in the new order.') })
      .strict()
      .meta({ id: 'ReorderTaskListRequest' }),
    response: z.object({ tasks: z.array(Task) }).meta({ id: 'ReorderedTasks' }),
    handler: {
      rpc: 'agents.reorderTaskList',
      request: (i) => ({ id: i.params.id, taskIds: i.body.taskIds }),
      response: (res) => ({ tasks: res.tasks.map(taskJson) }),
    },
  }),
  taskRoute({
    id: 'tasks.lists.next',
    method: 'get',
    path: '/task-lists/:id/next',
    summary: 'The task to work on next: open, not waiting for an open task; most urgent, then soonest due, then first in the list.',
    errors: ['task_list_not_found'],
    params: listParams,
    response: z.object({ task: Nullable(Task).describe('null when nothing is ready.') }).meta({ id: 'NextTask' }),
    handler: { rpc: 'agents.nextTask', request: byId, response: (res) => ({ task: res.task ? taskJson(res.task) : null }) },
  }),
  taskRoute({
    id: 'tasks.lists.duplicate',
    method: 'post',
    effect: 'creates',
    path: '/task-lists/:id/duplicate',
    summary: 'Copy a list with its tasks into a new list (a checklist template): open tasks by default, open again, blockers among them kept.',
    errors: ['task_list_not_found'],
    params: listParams,
    body: z
      .object({
        name: z.string().min(1).max(100).optional().describe('Default: the name with " (copy)".'),
        includeDone: z.boolean().default(false).describe('Copy the done tasks too (as open ones).'),
      })
      .strict()
      .meta({ id: 'DuplicateTaskListRequest' }),
    response: TaskList,
    status: 201,
    handler: {
      rpc: 'agents.duplicateTaskList',
      request: (i) => ({ id: i.params.id, name: i.body.name, includeDone: i.body.includeDone }),
      response: oneList,
    },
  }),
];
