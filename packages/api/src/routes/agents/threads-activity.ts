import { z } from 'zod';

import { AgentId, ListQuery, Nullable, route, type RouteInput, Timestamp } from '../../route.js';
import { Thread, ThreadEvent, threadEventJson, ThreadId, threadJson } from './threads.js';
import { messageJson, Run, runJson, ThreadMessage } from './threads-messages.js';

/**
 * Account-wide and housekeeping thread operations (docs/threads.md): the account's runs and usage
 * per agent, archiving idle threads; in one thread: searching its messages, merging into its
 * metadata, clearing its waiting messages, asking and waiting, its participants.
 */

const params = z.object({ id: ThreadId });
const ref = (i: RouteInput<{ id: string }>) => ({ threadId: i.params.id });
const common = { tag: 'threads', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };
const Usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string().describe('Decimal, in credits.') });
const usageJson = (u: { inputTokens: number; outputTokens: number; cost: string } | undefined) => ({
  inputTokens: Number(u?.inputTokens ?? 0),
  outputTokens: Number(u?.outputTokens ?? 0),
  cost: u?.cost || '0',
});

export const threadExtrasRoutes = [
  route({
    ...common,
    id: 'runs.list',
    method: 'get',
    path: '/me/runs',
    summary: 'Runs across the acting account’s threads, newest first: what is running now (status=running), what failed.',
    query: ListQuery.extend({
      status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']).optional().describe('Only runs in this state.'),
      agentId: AgentId.optional().describe('Only this agent’s runs.'),
    }),
    response: z.object({ runs: z.array(Run), nextCursor: Nullable(z.string()) }).meta({ id: 'AccountRunList' }),
    handler: {
      rpc: 'agents.listAccountRuns',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor, status: i.query.status, agentId: i.query.agentId }),
      response: (res) => ({ runs: res.runs.map(runJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'threads.usageByAgent',
    method: 'get',
    path: '/me/thread-usage',
    summary: 'What the acting account’s threads cost, per agent (most expensive first): threads, runs, failures, tokens, cost.',
    query: z.object({ since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601: only runs from then on.') }),
    response: z
      .object({
        total: Usage,
        runs: z.number().int(),
        agents: z.array(z.object({ agentId: z.string(), threads: z.number().int(), runs: z.number().int(), failed: z.number().int(), usage: Usage })),
      })
      .meta({ id: 'AccountThreadUsage' }),
    handler: {
      rpc: 'agents.getAccountUsage',
      request: (i) => ({ since: i.query.since }),
      response: (res) => ({
        total: usageJson(res.total),
        runs: res.runs,
        agents: res.agents.map((a) => ({ agentId: a.agentId, threads: a.threads, runs: a.runs, failed: a.failed, usage: usageJson(a.usage) })),
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.archiveIdle',
    method: 'post',
    effect: 'updates',
    path: '/me/threads/archive-idle',
    summary: 'Archive the idle threads without activity for olderThanDays days (at most 500 a call); they stay usable and can be unarchived.',
    body: z
      .object({
        olderThanDays: z.number().int().min(0).max(3650).describe('Days without activity.'),
        agentId: AgentId.optional().describe('Only this agent’s threads.'),
      })
      .strict()
      .meta({ id: 'ArchiveIdleRequest' }),
    response: z.object({ threadIds: z.array(z.string()).describe('The threads archived.') }).meta({ id: 'ArchivedThreads' }),
    handler: {
      rpc: 'agents.archiveIdleThreads',
      request: (i) => ({ olderThanDays: i.body.olderThanDays, agentId: i.body.agentId }),
      response: (res) => ({ threadIds: res.threadIds }),
    },
  }),
  route({
    ...common,
    id: 'threads.searchMessages',
    method: 'get',
    path: '/threads/:id/search',
    summary: 'The thread’s messages containing the text (case-insensitive), newest first.',
    errors: ['thread_not_found'],
    params,
    query: z.object({
      q: z.string().trim().min(1, 'must not be empty').max(200).describe('The text to find.'),
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('How many matches to return at most (1–100; default 20).'),
    }),
    response: z.object({ messages: z.array(ThreadMessage) }).meta({ id: 'ThreadMessageMatches' }),
    handler: {
      rpc: 'agents.searchThreadMessages',
      request: (i) => ({ threadId: i.params.id, query: i.query.q, limit: i.query.limit }),
      response: (res) => ({ messages: res.messages.map(messageJson) }),
    },
  }),
  route({
    ...common,
    id: 'threads.metadata.patch',
    method: 'patch',
    effect: 'updates',
    path: '/threads/:id/metadata',
    summary: 'Merge into the thread’s metadata (RFC 7396: a null member removes the key, objects merge); threads.update replaces it whole.',
    errors: ['thread_not_found'],
    params,
    body: z
      .record(z.string(), z.unknown(), { error: 'must be a JSON object' })
      .meta({ id: 'ThreadMetadataPatch', description: 'A JSON merge patch.' }),
    response: Thread,
    handler: {
      rpc: 'agents.patchThreadMetadata',
      request: (i) => ({ threadId: i.params.id, patchJson: JSON.stringify(i.body) }),
      response: (res) => threadJson(res.thread!),
    },
  }),
  route({
    ...common,
    id: 'threads.messages.clearPending',
    method: 'delete',
    path: '/threads/:id/pending-messages',
    summary: 'Retract every message still waiting for a run (none waiting: no change).',
    errors: ['thread_not_found'],
    params,
    response: z.object({ messageIds: z.array(z.string()).describe('The messages retracted.') }).meta({ id: 'ClearedPendingMessages' }),
    handler: { rpc: 'agents.clearPendingMessages', request: ref, response: (res) => ({ messageIds: res.messageIds }) },
  }),
  route({
    ...common,
    id: 'threads.participants',
    method: 'get',
    path: '/threads/:id/participants',
    summary: 'Who took part in the thread: people, agents, tools and the platform, with their events and messages, in order of appearance.',
    errors: ['thread_not_found'],
    params,
    response: z
      .object({
        participants: z.array(
          z.object({
            kind: z.enum(['human', 'agent', 'tool', 'system']),
            id: z.string().describe('The person, agent or tool; "" for the platform.'),
            events: z.number().int(),
            messages: z.number().int(),
            firstAt: Timestamp,
            lastAt: Timestamp,
          }),
        ),
      })
      .meta({ id: 'ThreadParticipants' }),
    handler: {
      rpc: 'agents.listThreadParticipants',
      request: ref,
      response: (res) => ({
        participants: res.participants.map((x) => ({ ...x, kind: x.kind as 'human' | 'agent' | 'tool' | 'system' })),
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.ask',
    method: 'post',
    effect: 'creates',
    path: '/threads/:id/ask',
    summary: 'Send a message (after the working run, if any) and wait, at most timeoutMs, for the agent’s reply: a conversation turn in one call.',
    errors: ['thread_not_found'],
    params,
    body: z
      .object({
        content: z.string().min(1, 'must not be empty').describe('The message (at most 32000 characters).'),
        timeoutMs: z.number().int().min(100).max(30_000).default(20_000).describe('How long to wait (100 to 30000 ms).'),
      })
      .strict()
      .meta({ id: 'AskThreadRequest' }),
    response: z
      .object({
        messageId: z.string(),
        runId: Nullable(z.string()),
        status: z
          .enum(['started', 'pending', 'queued', 'answered'])
          .describe('answered: the message answered the question the paused run asked (ask_person).'),
        timedOut: z.boolean().describe('true: still working when the time was up (threads.wait waits more).'),
        reply: Nullable(ThreadMessage).describe('The agent’s latest message after yours.'),
      })
      .meta({ id: 'ThreadAnswer' }),
    handler: {
      rpc: 'agents.askThread',
      request: (i) => ({ threadId: i.params.id, content: i.body.content, timeoutMs: i.body.timeoutMs }),
      response: (res) => ({
        messageId: res.messageId,
        runId: res.runId ?? null,
        status: res.status as 'started' | 'pending' | 'queued' | 'answered',
        timedOut: res.timedOut,
        reply: res.reply ? messageJson(res.reply) : null,
      }),
      deadlineMs: 40_000,
    },
  }),
  route({
    ...common,
    id: 'threads.waitForEvents',
    method: 'post',
    effect: 'reads',
    path: '/threads/:id/wait-events',
    summary: 'The thread’s events after a seq (of the given types), as soon as there is one, or none after timeoutMs: live updates without a stream.',
    errors: ['thread_not_found'],
    params,
    body: z
      .object({
        after: z.number().int().min(0).describe('Events with a greater seq.'),
        types: z
          .array(z.string().regex(/^[a-z_]+\.[a-z_]+$/, 'must be an event type such as run.completed'))
          .max(20)
          .default([])
          .describe('Only these event types (all when empty).'),
        timeoutMs: z.number().int().min(0).max(30_000).default(10_000).describe('How long to wait for one (0 to 30000 ms).'),
        limit: z.number().int().min(1).max(200).default(50).describe('How many events to return at most (1–200; default 50).'),
      })
      .strict()
      .meta({ id: 'WaitEventsRequest' }),
    response: z
      .object({
        events: z.array(ThreadEvent),
        timedOut: z.boolean(),
        lastSeq: z.number().int().describe('The thread’s last seq when answered.'),
      })
      .meta({ id: 'WaitedEvents' }),
    handler: {
      rpc: 'agents.waitThreadEvents',
      request: (i) => ({ threadId: i.params.id, after: i.body.after, types: i.body.types, timeoutMs: i.body.timeoutMs, limit: i.body.limit }),
      response: (res) => ({ events: res.events.map(threadEventJson), timedOut: res.timedOut, lastSeq: Number(res.lastSeq) }),
      deadlineMs: 40_000,
    },
  }),
  route({
    ...common,
    id: 'threads.runs.steps',
    method: 'get',
    path: '/threads/:id/runs/:runId/steps',
    summary: 'A run step by step: each model turn with its usage, the tools it called and how many failed.',
    errors: ['run_not_found', 'thread_not_found'],
    params: z.object({
      id: ThreadId,
      runId: z
        .string()
        .regex(/^run_[0-9a-z]{26}$/, 'must be a run id (run_…)')
        .describe('The run’s id (run_…).'),
    }),
    response: z
      .object({
        steps: z.array(
          z.object({
            step: z.number().int(),
            at: Timestamp,
            interrupted: z.boolean(),
            usage: Nullable(z.object({ model: z.string(), inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string() }).loose()),
            toolsCalled: z.array(z.string()),
            toolErrors: z.number().int(),
          }),
        ),
      })
      .meta({ id: 'RunSteps' }),
    handler: {
      rpc: 'agents.listRunSteps',
      request: (i) => ({ threadId: i.params.id, runId: i.params.runId }),
      response: (res) => ({
        steps: res.steps.map((s) => ({
          step: s.step,
          at: s.at,
          interrupted: s.interrupted,
          usage: s.usageJson ? (JSON.parse(s.usageJson) as { model: string; inputTokens: number; outputTokens: number; cost: string }) : null,
          toolsCalled: s.toolsCalled,
          toolErrors: s.toolErrors,
        })),
      }),
    },
  }),
];
