import type { Step } from './types';

const ns = (s: { run: string }) => `mem-${s.run}`;

/** Memory tools (docs/memory.md): each valid call works on the namespace the first step fills. */
const MEMORY: Step[] = [
  {
    tool: 'memory_set',
    valid: (s) => ({ namespace: ns(s), key: 'profile', value: { name: 'Ada' } }),
    invalid: (s) => ({ namespace: ns(s), key: 'bad key!', value: 1 }),
  },
  { tool: 'memory_get', valid: (s) => ({ namespace: ns(s), key: 'profile' }), invalid: (s) => ({ namespace: ns(s), key: 'absent' }) },
  {
    tool: 'memory_merge',
    valid: (s) => ({ namespace: ns(s), key: 'profile', patch: { lang: 'en' } }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', patch: { a: 1 }, ifVersion: 99 }),
  },
  {
    tool: 'memory_set_many',
    valid: (s) => ({
      namespace: ns(s),
      entries: [
        { key: 'a', value: 1 },
        { key: 'b', value: 2 },
      ],
    }),
    invalid: (s) => ({ namespace: ns(s), entries: [] }),
  },
  {
    tool: 'memory_get_many',
    valid: (s) => ({ namespace: ns(s), keys: ['a', 'b', 'zz'] }),
    invalid: (s) => ({ namespace: ns(s), keys: [] }),
  },
  { tool: 'memory_list', valid: (s) => ({ namespace: ns(s), prefix: '' }), invalid: () => ({ namespace: 'BAD' }) },
  { tool: 'memory_search', valid: () => ({ q: 'Ada' }), invalid: () => ({ q: '' }) },
  {
    tool: 'memory_increment',
    valid: (s) => ({ namespace: ns(s), key: 'count', by: 2 }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile' }),
  },
  {
    tool: 'memory_append',
    valid: (s) => ({ namespace: ns(s), key: 'log', values: ['x', 'y'] }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', values: [1] }),
  },
  {
    tool: 'memory_pop',
    valid: (s) => ({ namespace: ns(s), key: 'log', from: 'start' }),
    invalid: (s) => ({ namespace: ns(s), key: 'no-list' }),
  },
  {
    tool: 'memory_expire',
    valid: (s) => ({ namespace: ns(s), key: 'a', ttlSeconds: 3600 }),
    invalid: (s) => ({ namespace: ns(s), key: 'absent', ttlSeconds: 10 }),
  },
  {
    tool: 'memory_rename',
    valid: (s) => ({ namespace: ns(s), key: 'b', newKey: 'b2' }),
    invalid: (s) => ({ namespace: ns(s), key: 'a', newKey: 'count' }),
  },
  { tool: 'memory_history', valid: (s) => ({ namespace: ns(s), key: 'profile' }), invalid: (s) => ({ namespace: ns(s), key: 'never' }) },
  {
    tool: 'memory_restore',
    valid: (s) => ({ namespace: ns(s), key: 'profile', version: 1 }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', version: 999 }),
  },
  { tool: 'memory_delete_many', valid: (s) => ({ namespace: ns(s), keys: ['a'] }), invalid: (s) => ({ namespace: ns(s), keys: [] }) },
  { tool: 'memory_delete', valid: (s) => ({ namespace: ns(s), key: 'b2' }), invalid: (s) => ({ namespace: ns(s), key: 'b2', ifVersion: 5 }) },
  { tool: 'memory_namespaces_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  {
    tool: 'memory_namespaces_copy',
    valid: (s) => ({ namespace: ns(s), to: `${ns(s)}-copy` }),
    invalid: () => ({ namespace: 'empty-namespace', to: 'elsewhere' }),
  },
  { tool: 'memory_namespaces_delete', valid: (s) => ({ namespace: `${ns(s)}-copy` }), invalid: () => ({ namespace: 'BAD!' }) },
];

const Z26 = '0'.repeat(26);

/** Task tools: a list, two tasks (the second waits for the first), a comment. */
const TASKS: Step[] = [
  {
    tool: 'tasks_lists_create',
    valid: (s) => ({ name: `chores ${s.run}` }),
    invalid: () => ({ name: '' }),
    keep: (s, b) => (s.taskListId = b.id),
  },
  {
    tool: 'tasks_lists_list',
    before: async (s, t, key) => void (s.taskList2Id = (await t.ok('POST', '/task-lists', key, { name: `later ${s.run}` })).body.id),
    valid: () => ({ limit: 10 }),
    invalid: () => ({ limit: 0 }),
  },
  { tool: 'tasks_lists_get', valid: (s) => ({ id: s.taskListId }), invalid: () => ({ id: `tls_${Z26}` }) },
  {
    tool: 'tasks_lists_update',
    valid: (s) => ({ id: s.taskListId, description: 'around the house' }),
    invalid: (s) => ({ id: s.taskListId }),
  },
  {
    tool: 'tasks_create',
    valid: (s) => ({ listId: s.taskListId, title: 'buy lemons', priority: 'high', labels: ['shop'] }),
    invalid: (s) => ({ listId: s.taskListId, title: 'x', priority: 'whenever' }),
    keep: (s, b) => (s.taskId = b.id),
  },
  {
    tool: 'tasks_get',
    before: async (s, t, key) => void (s.task2Id = (await t.ok('POST', '/tasks', key, { listId: s.taskListId, title: 'make lemonade' })).body.id),
    valid: (s) => ({ id: s.taskId }),
    invalid: () => ({ id: `tsk_${Z26}` }),
  },
  { tool: 'tasks_list', valid: (s) => ({ listId: s.taskListId, status: 'open' }), invalid: () => ({ status: 'maybe' }) },
  {
    tool: 'tasks_update',
    valid: (s) => ({ id: s.taskId, notes: 'unwaxed', dueAt: '2030-01-01T09:00:00Z' }),
    invalid: (s) => ({ id: s.taskId, dueAt: 'tomorrow' }),
  },
  {
    tool: 'tasks_blockers_add',
    valid: (s) => ({ id: s.task2Id, blockerId: s.taskId }),
    invalid: (s) => ({ id: s.taskId, blockerId: s.task2Id }),
  },
  { tool: 'tasks_lists_next', valid: (s) => ({ id: s.taskListId }), invalid: () => ({ id: `tls_${Z26}` }) },
  { tool: 'tasks_complete', valid: (s) => ({ id: s.taskId }), invalid: () => ({ id: `tsk_${Z26}` }) },
  { tool: 'tasks_reopen', valid: (s) => ({ id: s.taskId }), invalid: () => ({ id: 'nope' }) },
  {
    tool: 'tasks_blockers_remove',
    valid: (s) => ({ id: s.task2Id, blockerId: s.taskId }),
    invalid: (s) => ({ id: s.task2Id, blockerId: 'nope' }),
  },
  { tool: 'tasks_assign', valid: (s) => ({ id: s.taskId, agentId: s.agentId }), invalid: (s) => ({ id: s.taskId, agentId: `agt_${Z26}` }) },
  {
    tool: 'tasks_lists_reorder',
    valid: (s) => ({ id: s.taskListId, taskIds: [s.task2Id, s.taskId] }),
    invalid: (s) => ({ id: s.taskListId, taskIds: [s.taskId] }),
  },
  {
    tool: 'tasks_move',
    valid: (s) => ({ id: s.task2Id, listId: s.taskList2Id }),
    invalid: (s) => ({ id: s.task2Id, listId: `tls_${Z26}` }),
  },
  {
    tool: 'tasks_comments_create',
    valid: (s) => ({ id: s.taskId, body: 'the shop is closed on Sundays' }),
    invalid: (s) => ({ id: s.taskId, body: '' }),
    keep: (s, b) => (s.taskCommentId = b.id),
  },
  { tool: 'tasks_comments_list', valid: (s) => ({ id: s.taskId }), invalid: () => ({ id: `tsk_${Z26}` }) },
  {
    tool: 'tasks_comments_update',
    valid: (s) => ({ id: s.taskId, commentId: s.taskCommentId, body: 'closed on Sundays and Mondays' }),
    invalid: (s) => ({ id: s.taskId, commentId: s.taskCommentId, body: '' }),
  },
  { tool: 'tasks_activity', valid: (s) => ({ id: s.taskId }), invalid: () => ({ id: `tsk_${Z26}` }) },
  {
    tool: 'tasks_comments_delete',
    valid: (s) => ({ id: s.taskId, commentId: s.taskCommentId }),
    invalid: (s) => ({ id: s.taskId, commentId: 'nope' }),
  },
  { tool: 'tasks_duplicate', valid: (s) => ({ id: s.taskId, title: 'buy more lemons' }), invalid: () => ({ id: `tsk_${Z26}` }) },
  { tool: 'tasks_lists_duplicate', valid: (s) => ({ id: s.taskListId, includeDone: true }), invalid: () => ({ id: `tls_${Z26}` }) },
  { tool: 'tasks_lists_clear_completed', valid: (s) => ({ id: s.taskListId }), invalid: () => ({ id: `tls_${Z26}` }) },
  { tool: 'tasks_delete', valid: (s) => ({ id: s.taskId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'tasks_lists_delete', valid: (s) => ({ id: s.taskList2Id }), invalid: () => ({ id: `tls_${Z26}` }) },
];

/** Schedule tools: a daily schedule to the core steps' agent (never due during the test). */
const SCHEDULES: Step[] = [
  { tool: 'schedules_preview', valid: () => ({ cron: '0 9 * * MON-FRI', count: 2 }), invalid: () => ({ cron: '99 * * * *' }) },
  {
    tool: 'schedules_create',
    valid: (s) => ({ name: `daily ${s.run}`, message: 'summarise yesterday', agentId: s.agentId, cron: '0 9 * * *' }),
    invalid: (s) => ({ name: 'x', message: 'y', agentId: s.agentId }),
    keep: (s, b) => (s.scheduleId = b.id),
  },
  { tool: 'schedules_list', valid: () => ({ status: 'active' }), invalid: () => ({ status: 'sleeping' }) },
  { tool: 'schedules_get', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: `sch_${Z26}` }) },
  { tool: 'schedules_update', valid: (s) => ({ id: s.scheduleId, message: 'summarise today' }), invalid: (s) => ({ id: s.scheduleId }) },
  { tool: 'schedules_skip', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: `sch_${Z26}` }) },
  { tool: 'schedules_pause', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: `sch_${Z26}` }) },
  { tool: 'schedules_resume', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'schedules_trigger', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: `sch_${Z26}` }) },
  { tool: 'schedules_firings_list', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: `sch_${Z26}` }) },
  { tool: 'schedules_delete', valid: (s) => ({ id: s.scheduleId }), invalid: () => ({ id: 'nope' }) },
];

const item = (id: string, answer = 'yes') => ({ id, question: `${id}?`, answer });

/** Profile tools beyond the core ones: on a profile of their own with two versions and a branch. */
const PROFILES: Step[] = [
  {
    tool: 'profiles_working_stage',
    before: async (s, t, key) => void (s.opsProfileId = (await t.ok('POST', '/profiles', key, { name: `ops ${s.run}` })).body.id),
    valid: (s) => ({ id: s.opsProfileId, kind: 'constraints', item: item('warm') }),
    invalid: (s) => ({ id: s.opsProfileId, kind: 'moods', item: item('x') }),
  },
  {
    tool: 'profiles_working_unstage',
    valid: (s) => ({ id: s.opsProfileId, kind: 'constraints', itemId: 'never-staged' }),
    invalid: (s) => ({ id: s.opsProfileId, kind: 'moods', itemId: 'warm' }),
  },
  {
    tool: 'profiles_branches_list',
    before: async (s, t, key) => {
      const p = `/profiles/${s.opsProfileId}`;
      s.opsV1 = (await t.ok('POST', `${p}/commits`, key, { message: 'one' })).body.id;
      s.opsBranch = (await t.ok('POST', `${p}/branches`, key, { name: 'side' })).body.id;
      await t.ok('POST', `${p}/working-changes/constraints`, key, { item: item('warm', 'very') });
      s.opsV2 = (await t.ok('POST', `${p}/commits`, key, { message: 'two' })).body.id;
    },
    valid: (s) => ({ id: s.opsProfileId }),
    invalid: () => ({ id: 'x' }),
  },
  {
    tool: 'profiles_branches_get',
    valid: (s) => ({ id: s.opsProfileId, branchId: 'main' }),
    invalid: (s) => ({ id: s.opsProfileId, branchId: 'nope' }),
  },
  {
    tool: 'profiles_branches_update',
    valid: (s) => ({ id: s.opsProfileId, branchId: s.opsBranch, description: 'a side branch' }),
    invalid: (s) => ({ id: s.opsProfileId, branchId: 'main', name: 'trunk' }),
  },
  { tool: 'profiles_versions_list', valid: (s) => ({ id: s.opsProfileId, q: 'one' }), invalid: (s) => ({ id: s.opsProfileId, since: 'yesterday' }) },
  { tool: 'profiles_search', valid: (s) => ({ id: s.opsProfileId, q: 'warm' }), invalid: (s) => ({ id: s.opsProfileId, q: '' }) },
  { tool: 'profiles_stats', valid: (s) => ({ id: s.opsProfileId }), invalid: () => ({ id: 'x' }) },
  {
    tool: 'profiles_revert',
    valid: (s) => ({ id: s.opsProfileId, versionId: s.opsV2 }),
    invalid: (s) => ({ id: s.opsProfileId, versionId: 'ver_nope' }),
  },
  {
    tool: 'profiles_cherry_pick',
    valid: (s) => ({ id: s.opsProfileId, versionId: s.opsV2, branchId: s.opsBranch }),
    invalid: (s) => ({ id: s.opsProfileId, versionId: s.opsV1 }),
  },
  {
    tool: 'profiles_branches_reset',
    valid: (s) => ({ id: s.opsProfileId, branchId: 'main', versionId: s.opsV1 }),
    invalid: (s) => ({ id: s.opsProfileId, branchId: 'main', versionId: 'nope' }),
  },
  {
    tool: 'profiles_tags_create',
    valid: (s) => ({ id: s.opsProfileId, name: `v1-${s.run}`, versionId: s.opsV1 }),
    invalid: (s) => ({ id: s.opsProfileId, name: 'bad name' }),
  },
  { tool: 'profiles_tags_list', valid: (s) => ({ id: s.opsProfileId }), invalid: () => ({ id: 'x' }) },
  {
    tool: 'profiles_tags_delete',
    valid: (s) => ({ id: s.opsProfileId, name: `v1-${s.run}` }),
    invalid: (s) => ({ id: s.opsProfileId, name: 'bad name' }),
  },
  { tool: 'profiles_working_discard', valid: (s) => ({ id: s.opsProfileId }), invalid: () => ({ id: 'x' }) },
  { tool: 'profiles_duplicate', valid: (s) => ({ id: s.opsProfileId, name: `ops copy ${s.run}` }), invalid: () => ({ id: 'x' }) },
];

export const STEPS: Step[] = [...MEMORY, ...TASKS, ...SCHEDULES, ...PROFILES];
