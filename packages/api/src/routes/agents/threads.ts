import { z } from 'zod';

import type { agents_threads } from '@svc/proto';

import { AgentId, ListQuery, Nullable, prefixedId, route, type RouteInput, StreamHeaders, Timestamp } from '../../route.js';
import { ClientMessageId, ThreadMessageMode } from '../../schemas/threads.js';

/**
 * Threads (docs/threads.md): conversations with an agent. Messages start a run or are injected
 * into the running one; every change is an event of the thread's append-only list (seq 1, 2, 3...),
 * which a client lists, or streams live with `Accept: text/event-stream` and resumes after
 * `Last-Event-ID`.
 */

export const ThreadId = prefixedId('thr', 'a thread id');
export const ThreadTag = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.:-]{0,39}$/, 'must be 1 to 40 characters: a-z, 0-9, _ . : - (starting with a letter or digit)')
  .describe('A tag: 1–40 of a-z 0-9 _ . : - (starting with a letter or digit).');
const MAX_MESSAGE = 32_000;

const Usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string().describe('Decimal, in credits.') });

export const Thread = z
  .object({
    id: z.string(),
    accountId: z.string(),
    projectId: Nullable(z.string()),
    agentId: z.string(),
    title: Nullable(z.string()),
    metadata: z.record(z.string(), z.unknown()),
    status: z.enum(['idle', 'running']),
    currentRunId: Nullable(z.string()),
    lastSeq: z.number().int().describe('The seq of the thread’s last event.'),
    usage: Usage.describe('Model usage over all the thread’s runs.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    lastActivityAt: Timestamp,
    archivedAt: Nullable(Timestamp).describe('When it was archived (threads.archive); null while it is not.'),
    tags: z.array(z.string()).describe('Its tags (threads.tags.add).'),
    forkedFrom: Nullable(z.object({ threadId: z.string(), seq: z.number().int() })).describe(
      'A fork’s origin: the thread and the seq it was forked at.',
    ),
  })
  .meta({ id: 'Thread' });

export const threadJson = (t: agents_threads.Thread) => ({
  id: t.id,
  accountId: t.accountId,
  projectId: t.projectId ?? null,
  agentId: t.agentId,
  title: t.title ?? null,
  metadata: JSON.parse(t.metadataJson || '{}') as Record<string, unknown>,
  status: t.status as 'idle' | 'running',
  currentRunId: t.currentRunId ?? null,
  lastSeq: Number(t.lastSeq),
  usage: { inputTokens: Number(t.usage?.inputTokens ?? 0), outputTokens: Number(t.usage?.outputTokens ?? 0), cost: t.usage?.cost || '0' },
  createdAt: t.createdAt,
  updatedAt: t.updatedAt,
  lastActivityAt: t.lastActivityAt,
  archivedAt: t.archivedAt ?? null,
  tags: t.tags ?? [],
  forkedFrom: t.forkedFromThreadId ? { threadId: t.forkedFromThreadId, seq: Number(t.forkedAtSeq ?? 0) } : null,
});

export const ThreadEvent = z
  .object({
    id: z.string(),
    seq: z.number().int().describe('1, 2, 3… per thread; 0 for a live text delta, which is never stored.'),
    type: z
      .string()
      .describe(
        'thread.created, message.created, message.injected, injection.delivered, run.queued, run.started, run.step, tool.called, tool.result (aborted: true when a cancel, an interrupt or a rollback stopped the call), run.completed, run.failed, run.cancelled, run.rolled_back, thread.updated; approval.requested, approval.approved, approval.rejected, approval.expired, approval.cancelled, question.asked, question.answered, question.expired, question.cancelled, approval_policy.updated; message.delta live only.',
      ),
    createdAt: Timestamp,
    runId: Nullable(z.string()),
    producer: z.object({ kind: z.enum(['human', 'agent', 'tool', 'system']), id: z.string().optional(), keyId: Nullable(z.string()) }).loose(),
    data: z.record(z.string(), z.unknown()),
    usage: Nullable(
      z.object({ model: z.string(), inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string(), currency: z.string() }),
    ),
  })
  .meta({ id: 'ThreadEvent' });

export const threadEventJson = (e: agents_threads.ThreadEvent) => ({
  id: e.id,
  seq: Number(e.seq),
  type: e.type,
  createdAt: e.createdAt,
  runId: e.runId ?? null,
  producer: JSON.parse(e.producerJson || '{}'),
  data: JSON.parse(e.dataJson || '{}'),
  usage: e.usageJson ? JSON.parse(e.usageJson) : null,
});

// The length is checked by the agents service, which answers 413 message_too_large above it.
const Message = z.string().min(1, 'must not be empty').describe(`At most ${MAX_MESSAGE} characters (413 message_too_large above it).`);
const Metadata = z.record(z.string(), z.unknown()).describe('Your own JSON object (at most 16 KiB).');

const CreateThreadBody = z
  .object({
    agentId: AgentId.optional().describe('The agent; the account’s first default agent when absent.'),
    title: z.string().max(200).optional().describe('A title for the thread (at most 200 characters; default: none).'),
    metadata: Metadata.optional(),
    message: Message.optional().describe('A first message, which starts a run.'),
  })
  .strict()
  .meta({ id: 'CreateThreadRequest' });

const InjectBody = z
  .object({
    content: Message,
    mode: ThreadMessageMode.default('boundary'),
    clientMessageId: ClientMessageId.optional(),
  })
  .strict()
  .meta({ id: 'InjectMessageRequest' });

const Injected = z
  .object({
    messageId: z.string(),
    status: z
      .enum(['started', 'pending', 'queued', 'answered'])
      .describe(
        'started: a new run; pending: delivered at the running run’s next step boundary; queued: a run after it; answered: the answer to the question the paused run asked (ask_person), which resumes it.',
      ),
    runId: Nullable(z.string()),
    seq: z.number().int().describe('The seq of the event recording the message (0 for a repeated clientMessageId).'),
    rolledBackRunId: Nullable(z.string()).describe('Mode rollback while a run worked: the run it rolled back; null otherwise.'),
  })
  .meta({ id: 'InjectedMessage' });

const params = z.object({ id: ThreadId });
const byId = (i: RouteInput<{ id: string }>) => ({ id: i.params.id });

export const threadsRoutes = [
  route({
    id: 'threads.list',
    method: 'get',
    path: '/me/threads',
    summary: 'Threads of the acting account (of its project, for a project-scoped key), most recent activity first.',
    tag: 'threads',
    query: ListQuery.extend({
      agentId: AgentId.optional(),
      status: z.enum(['idle', 'running']).optional().describe('Only threads with a run going (running) or none (idle).'),
      tag: ThreadTag.optional().describe('Only threads carrying this tag.'),
      archived: z.enum(['true', 'false']).optional().describe('true: the archived threads only; false (default): the others.'),
    }),
    response: z.object({ threads: z.array(Thread), nextCursor: Nullable(z.string()) }).meta({ id: 'ThreadList' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.listThreads',
      request: (i) => ({
        limit: i.query.limit,
        cursor: i.query.cursor,
        agentId: i.query.agentId,
        status: i.query.status,
        tag: i.query.tag,
        archived: i.query.archived === 'true',
      }),
      response: (res) => ({ threads: res.threads.map(threadJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'threads.create',
    method: 'post',
    effect: 'creates',
    path: '/threads',
    summary: 'Start a thread with an agent (the account’s default agent when none is named); a first message starts a run.',
    errors: ['agent_not_found', 'message_too_large', 'no_default_agent'],
    tag: 'threads',
    body: CreateThreadBody,
    response: Thread.extend({ runId: Nullable(z.string()) }).meta({ id: 'CreatedThread' }),
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.createThread',
      request: (i) => ({
        agentId: i.body.agentId,
        title: i.body.title,
        metadataJson: i.body.metadata === undefined ? undefined : JSON.stringify(i.body.metadata),
        message: i.body.message,
      }),
      response: (res) => ({ ...threadJson(res.thread!), runId: res.runId ?? null }),
    },
  }),
  route({
    id: 'threads.get',
    method: 'get',
    path: '/threads/:id',
    summary: 'A thread: its status, current run and usage totals.',
    errors: ['account_not_found', 'thread_not_found'],
    tag: 'threads',
    params,
    response: Thread,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { rpc: 'agents.getThread', request: byId, response: (res) => threadJson(res.thread!) },
  }),
  route({
    id: 'threads.update',
    method: 'patch',
    effect: 'updates',
    path: '/threads/:id',
    summary: 'Rename a thread (null clears the title) or replace its metadata.',
    errors: ['thread_not_found'],
    tag: 'threads',
    params,
    body: z
      .object({
        title: z.string().max(200).nullable().optional().describe('The thread’s title (at most 200 characters); null clears it.'),
        metadata: Metadata.optional(),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
      .meta({ id: 'UpdateThreadRequest' }),
    response: Thread,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.updateThread',
      request: (i) => ({
        id: i.params.id,
        title: i.body.title ?? undefined,
        clearTitle: i.body.title === null,
        metadataJson: i.body.metadata === undefined ? undefined : JSON.stringify(i.body.metadata),
      }),
      response: (res) => threadJson(res.thread!),
    },
  }),
  route({
    id: 'threads.delete',
    method: 'delete',
    path: '/threads/:id',
    summary: 'Delete a thread: its run is cancelled and its live streams end.',
    errors: ['thread_not_found'],
    tag: 'threads',
    params,
    response: z.object({ success: z.literal(true), cancelledRunId: Nullable(z.string()) }).meta({ id: 'DeletedThread' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.deleteThread',
      request: byId,
      response: (res) => ({ success: true as const, cancelledRunId: res.cancelledRunId ?? null }),
    },
  }),
  route({
    id: 'threads.events',
    method: 'get',
    path: '/threads/:id/events',
    summary:
      'The thread’s events after `after` (a seq), oldest first. With Accept: text/event-stream, a live stream: every event after `after` or Last-Event-ID, then new ones as they happen (text deltas included), with no gap and no repeat.',
    errors: ['account_not_found', 'thread_not_found', 'too_many_streams'],
    tag: 'threads',
    params,
    query: z.object({
      after: z.coerce.number().int().min(0).default(0).describe('Events with a greater seq.'),
      limit: z.coerce.number().int().min(1).max(200).default(50).describe('How many events to return at most (1–200; default 50).'),
    }),
    headers: StreamHeaders,
    response: z.object({ events: z.array(ThreadEvent), nextAfter: Nullable(z.number().int()) }).meta({ id: 'ThreadEventList' }),
    events: { schema: ThreadEvent, description: 'Each event as `data`, its seq as `id` (none for message.delta), its type as `event`.' },
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: { kind: 'local', name: 'threads.events' },
  }),
  route({
    id: 'threads.inject',
    method: 'post',
    effect: 'creates',
    path: '/threads/:id/inject',
    summary: 'Send a message: it starts a run when the thread is idle, or is delivered into the running run (see mode).',
    errors: ['client_message_id_conflict', 'message_too_large', 'thread_busy', 'thread_not_found'],
    tag: 'threads',
    params,
    body: InjectBody,
    response: Injected,
    status: 202,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.injectMessage',
      request: (i) => ({ threadId: i.params.id, content: i.body.content, mode: i.body.mode, clientMessageId: i.body.clientMessageId }),
      response: (res) => ({
        messageId: res.messageId,
        status: res.status as 'started' | 'pending' | 'queued' | 'answered',
        runId: res.runId ?? null,
        seq: Number(res.seq),
        rolledBackRunId: res.rolledBackRunId ?? null,
      }),
    },
  }),
  route({
    id: 'threads.cancel',
    method: 'post',
    effect: 'deletes',
    path: '/threads/:id/cancel',
    summary:
      'Cancel the thread’s running run: the model turn or tool call in progress is aborted at once (a tool that changes something is let answer first), and the run ends with run.cancelled.',
    errors: ['thread_not_found'],
    tag: 'threads',
    params,
    response: z.object({ runId: Nullable(z.string()), status: z.enum(['cancelling', 'idle']) }).meta({ id: 'CancelledRun' }),
    status: 202,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'agents.cancelRun',
      request: (i) => ({ threadId: i.params.id }),
      response: (res) => ({ runId: res.runId ?? null, status: res.status as 'cancelling' | 'idle' }),
    },
  }),
];
