import { z } from 'zod';

import { AgentId, ListQuery, Nullable, route, type RouteInput, Timestamp } from '../../route.js';
import { Thread, ThreadId, threadJson, ThreadTag } from './threads.js';
import { MessageId, messageJson, Run, runJson, ThreadMessage } from './threads-messages.js';

/**
 * Organising threads and working with their outcome (docs/threads.md): fork, archive, tags, search,
 * export, usage, waiting for a reply, retrying a failed run, the restore of a deleted thread.
 */

const params = z.object({ id: ThreadId });
const ref = (i: RouteInput<{ id: string }>) => ({ threadId: i.params.id });
const tagParams = z.object({ id: ThreadId, tag: ThreadTag });
const common = { tag: 'threads', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };
const one = (res: { thread?: Parameters<typeof threadJson>[0] }) => threadJson(res.thread!);
const Usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string().describe('Decimal, in credits.') });

export const threadOpsRoutes = [
  route({
    ...common,
    id: 'threads.search',
    method: 'get',
    path: '/me/threads/search',
    summary:
      'Threads whose title or messages contain the text (case-insensitive), most recent activity first, each with the latest matching message.',
    query: ListQuery.extend({ q: z.string().trim().min(1, 'must not be empty').max(200).describe('The text to find.') }).extend({
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('How many threads to return at most (1–100; default 20).'),
    }),
    response: z
      .object({
        matches: z.array(
          z.object({
            thread: Thread,
            snippet: Nullable(z.string()).describe('The latest matching message (null when only the title matched).'),
            seq: Nullable(z.number().int()).describe('Its event’s seq.'),
          }),
        ),
        nextCursor: Nullable(z.string()),
      })
      .meta({ id: 'ThreadSearchResult' }),
    handler: {
      rpc: 'agents.searchThreads',
      request: (i) => ({ query: i.query.q, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({
        matches: res.matches.map((m) => ({
          thread: threadJson(m.thread!),
          snippet: m.snippet ? (m.snippet.length > 300 ? `${m.snippet.slice(0, 300)}…` : m.snippet) : null,
          seq: m.snippet ? Number(m.seq) : null,
        })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.listDeleted',
    method: 'get',
    path: '/me/threads/deleted',
    summary: 'Threads deleted in the last 30 days, which threads.restore brings back; most recently deleted first.',
    query: ListQuery,
    response: z
      .object({ threads: z.array(z.object({ thread: Thread, deletedAt: Timestamp })), nextCursor: Nullable(z.string()) })
      .meta({ id: 'DeletedThreadList' }),
    handler: {
      rpc: 'agents.listDeletedThreads',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({
        threads: res.threads.map((d) => ({ thread: threadJson(d.thread!), deletedAt: d.deletedAt })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.tags.list',
    method: 'get',
    path: '/me/thread-tags',
    summary: 'The tags on the acting account’s threads, with how many threads carry each (most used first).',
    response: z.object({ tags: z.array(z.object({ tag: z.string(), threads: z.number().int() })) }).meta({ id: 'ThreadTagList' }),
    handler: { rpc: 'agents.listThreadTags', request: () => ({}), response: (res) => ({ tags: res.tags }) },
  }),
  route({
    ...common,
    id: 'threads.tags.add',
    method: 'put',
    effect: 'creates',
    path: '/threads/:id/tags/:tag',
    summary: 'Put a tag on the thread (at most 20 tags; again: no change).',
    errors: ['thread_not_found'],
    params: tagParams,
    response: Thread,
    handler: { rpc: 'agents.addThreadTag', request: (i) => ({ threadId: i.params.id, tag: i.params.tag }), response: one },
  }),
  route({
    ...common,
    id: 'threads.tags.remove',
    method: 'delete',
    path: '/threads/:id/tags/:tag',
    summary: 'Take a tag off the thread (absent: no change).',
    errors: ['thread_not_found'],
    params: tagParams,
    response: Thread,
    handler: { rpc: 'agents.removeThreadTag', request: (i) => ({ threadId: i.params.id, tag: i.params.tag }), response: one },
  }),
  route({
    ...common,
    id: 'threads.fork',
    method: 'post',
    effect: 'creates',
    path: '/threads/:id/fork',
    summary:
      'A new thread with the same agent holding this one’s conversation up to an event (the last when absent): try another direction without losing this one.',
    errors: ['thread_not_found'],
    params,
    body: z
      .object({
        atSeq: z.number().int().min(1).optional().describe('Keep the messages up to this event’s seq.'),
        title: z.string().max(200).optional().describe('The fork’s title; the source’s with " (fork)" when absent.'),
      })
      .strict()
      .meta({ id: 'ForkThreadRequest' }),
    response: Thread,
    status: 201,
    handler: {
      rpc: 'agents.forkThread',
      request: (i) => ({ threadId: i.params.id, atSeq: i.body.atSeq ?? 0, title: i.body.title }),
      response: one,
    },
  }),
  route({
    ...common,
    personOnly: true,
    id: 'threads.messages.edit',
    statuses: {
      403: 'An agent or host key, or the MCP channel (`human_principal_required`).',
      422: 'An agent’s or another person’s message (`message_not_editable`).',
    },
    method: 'post',
    effect: 'creates',
    path: '/threads/:id/messages/:messageId/edit',
    summary:
      'Edit one of your earlier messages: a new thread holding the conversation before it, then the edited message, on which a run starts. This thread is not changed.',
    errors: ['message_not_editable', 'message_not_found', 'message_too_large', 'thread_not_found'],
    params: z.object({ id: ThreadId, messageId: MessageId }),
    body: z
      .object({
        content: z.string().min(1, 'must not be empty').describe('The new text (at most 32000 characters).'),
        title: z.string().max(200).optional().describe('The new thread’s title; this one’s with " (fork)" when absent.'),
      })
      .strict()
      .meta({ id: 'EditEarlierMessageRequest' }),
    response: z
      .object({
        thread: Thread,
        runId: z.string().describe('The run started on the edited message.'),
        messageId: z.string().describe('The edited message, in the new thread.'),
        replacedMessageId: z.string().describe('The message it replaces, in this thread.'),
      })
      .meta({ id: 'EditedMessageFork' }),
    status: 201,
    handler: {
      rpc: 'agents.editEarlierMessage',
      request: (i) => ({ threadId: i.params.id, messageId: i.params.messageId, content: i.body.content, title: i.body.title }),
      response: (res) => ({ thread: threadJson(res.thread!), runId: res.runId, messageId: res.messageId, replacedMessageId: res.replacedMessageId }),
    },
  }),
  route({
    ...common,
    id: 'threads.archive',
    method: 'post',
    effect: 'updates',
    path: '/threads/:id/archive',
    summary: 'Archive the thread: it leaves threads.list (archived=true lists it) and stays usable.',
    errors: ['thread_not_found'],
    params,
    response: Thread,
    handler: { rpc: 'agents.archiveThread', request: ref, response: one },
  }),
  route({
    ...common,
    id: 'threads.unarchive',
    method: 'post',
    effect: 'updates',
    path: '/threads/:id/unarchive',
    summary: 'Bring an archived thread back to threads.list.',
    errors: ['thread_not_found'],
    params,
    response: Thread,
    handler: { rpc: 'agents.unarchiveThread', request: ref, response: one },
  }),
  route({
    ...common,
    id: 'threads.restore',
    method: 'post',
    effect: 'updates',
    path: '/threads/:id/restore',
    summary: 'Undo the deletion of a thread deleted in the last 30 days (a live thread: no change).',
    errors: ['thread_not_found'],
    params,
    response: Thread,
    handler: { rpc: 'agents.restoreThread', request: ref, response: one },
  }),
  route({
    ...common,
    id: 'threads.setAgent',
    method: 'put',
    effect: 'updates',
    path: '/threads/:id/agent',
    summary: 'Hand the thread to another agent of the account: its next runs are that agent’s (409 thread_busy while a run works).',
    errors: ['agent_not_found', 'thread_not_found'],
    params,
    body: z.object({ agentId: AgentId }).strict().meta({ id: 'SetThreadAgentRequest' }),
    response: Thread,
    handler: { rpc: 'agents.setThreadAgent', request: (i) => ({ threadId: i.params.id, agentId: i.body.agentId }), response: one },
  }),
  route({
    ...common,
    id: 'threads.export',
    method: 'get',
    path: '/threads/:id/export',
    summary: 'The conversation as one Markdown document or JSON text (messages and the agent’s tool calls; retracted messages left out).',
    errors: ['thread_not_found'],
    params,
    query: z.object({
      format: z.enum(['markdown', 'json']).default('markdown').describe('markdown (a transcript to read; default) or json (every event).'),
    }),
    response: z.object({ format: z.enum(['markdown', 'json']), content: z.string(), messages: z.number().int() }).meta({ id: 'ThreadExport' }),
    handler: {
      rpc: 'agents.exportThread',
      request: (i) => ({ threadId: i.params.id, format: i.query.format }),
      response: (res) => ({ format: res.format as 'markdown' | 'json', content: res.content, messages: res.messages }),
    },
  }),
  route({
    ...common,
    id: 'threads.usage',
    method: 'get',
    path: '/threads/:id/usage',
    summary: 'What the thread cost: totals, per model, and per run (its latest 200 runs).',
    errors: ['thread_not_found'],
    params,
    response: z
      .object({
        total: Usage,
        byModel: z.array(Usage.extend({ model: z.string(), turns: z.number().int().describe('Model turns.') })),
        runs: z.array(Run),
      })
      .meta({ id: 'ThreadUsageReport' }),
    handler: {
      rpc: 'agents.getThreadUsage',
      request: ref,
      response: (res) => ({
        total: {
          inputTokens: Number(res.total?.inputTokens ?? 0),
          outputTokens: Number(res.total?.outputTokens ?? 0),
          cost: res.total?.cost || '0',
        },
        byModel: res.byModel.map((u) => ({
          model: u.model,
          inputTokens: Number(u.inputTokens),
          outputTokens: Number(u.outputTokens),
          cost: u.cost,
          turns: u.turns,
        })),
        runs: res.runs.map(runJson),
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.wait',
    method: 'post',
    effect: 'reads',
    path: '/threads/:id/wait',
    summary: 'Wait until the thread is idle (its runs done), at most timeoutMs; answers with the thread and the agent’s last reply.',
    errors: ['thread_not_found'],
    params,
    body: z
      .object({ timeoutMs: z.number().int().min(100).max(30_000).default(10_000).describe('How long to wait at most (100 to 30000 ms).') })
      .strict()
      .meta({ id: 'WaitThreadRequest' }),
    response: z
      .object({
        thread: Thread,
        timedOut: z.boolean().describe('true: a run was still working when the time was up.'),
        lastReply: Nullable(ThreadMessage),
      })
      .meta({ id: 'WaitThreadResult' }),
    handler: {
      rpc: 'agents.waitThread',
      request: (i) => ({ threadId: i.params.id, timeoutMs: i.body.timeoutMs }),
      response: (res) => ({ thread: threadJson(res.thread!), timedOut: res.timedOut, lastReply: res.lastReply ? messageJson(res.lastReply) : null }),
      deadlineMs: 40_000,
    },
  }),
  route({
    ...common,
    id: 'threads.lastReply',
    method: 'get',
    path: '/threads/:id/last-reply',
    summary: 'The agent’s latest message in the thread (null before its first).',
    errors: ['thread_not_found'],
    params,
    response: z.object({ message: Nullable(ThreadMessage) }).meta({ id: 'LastReply' }),
    handler: { rpc: 'agents.getLastReply', request: ref, response: (res) => ({ message: res.message ? messageJson(res.message) : null }) },
  }),
  route({
    ...common,
    id: 'threads.retry',
    method: 'post',
    effect: 'creates',
    path: '/threads/:id/retry',
    summary:
      'Run again the message of the thread’s last run when it failed or was cancelled (409 nothing_to_retry otherwise, thread_busy while a run works).',
    errors: ['nothing_to_retry', 'thread_busy', 'thread_not_found'],
    params,
    response: z.object({ runId: z.string().describe('The new run.'), retriedRunId: z.string(), messageId: z.string() }).meta({ id: 'RetriedRun' }),
    status: 202,
    handler: {
      rpc: 'agents.retryThread',
      request: ref,
      response: (res) => ({ runId: res.runId, retriedRunId: res.retriedRunId, messageId: res.messageId }),
    },
  }),
  route({
    ...common,
    id: 'threads.summary',
    method: 'get',
    path: '/threads/:id/summary',
    summary: 'The thread at a glance: counts of messages, runs, failures and tool calls, its first message, the agent’s last reply, the last error.',
    errors: ['thread_not_found'],
    params,
    response: z
      .object({
        thread: Thread,
        userMessages: z.number().int(),
        agentMessages: z.number().int(),
        pendingMessages: z.number().int(),
        runs: z.number().int(),
        failedRuns: z.number().int(),
        toolCalls: z.number().int(),
        toolErrors: z.number().int(),
        firstMessage: Nullable(ThreadMessage),
        lastReply: Nullable(ThreadMessage),
        lastError: Nullable(z.object({ code: z.string(), message: z.string() })),
      })
      .meta({ id: 'ThreadSummary' }),
    handler: {
      rpc: 'agents.getThreadSummary',
      request: ref,
      response: (res) => ({
        thread: threadJson(res.thread!),
        userMessages: res.userMessages,
        agentMessages: res.agentMessages,
        pendingMessages: res.pendingMessages,
        runs: res.runs,
        failedRuns: res.failedRuns,
        toolCalls: res.toolCalls,
        toolErrors: res.toolErrors,
        firstMessage: res.firstMessage ? messageJson(res.firstMessage) : null,
        lastReply: res.lastReply ? messageJson(res.lastReply) : null,
        lastError: res.lastErrorJson ? (JSON.parse(res.lastErrorJson) as { code: string; message: string }) : null,
      }),
    },
  }),
];
