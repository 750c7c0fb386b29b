import { z } from 'zod';

import type { agents_threads } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route, type RouteInput, Timestamp } from '../../route.js';
import { ThreadEvent, threadEventJson, ThreadId } from './threads.js';

/**
 * A thread's messages one by one (a waiting message can be edited or retracted until a run takes
 * it), one event by seq, its runs with their usage, tool calls and model context (docs/threads.md).
 */

export const MessageId = prefixedId('msg', 'a message id');
const RunId = prefixedId('run', 'a run id');
const Usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.string().describe('Decimal, in credits.') });

export const ThreadMessage = z
  .object({
    id: z.string(),
    seq: z.number().int().describe('The seq of the event that recorded it (0 for a waiting message listed by threads.messages.pending).'),
    role: z.enum(['user', 'assistant']),
    content: z.string(),
    runId: Nullable(z.string()).describe('The run it started, was delivered to, or was written in.'),
    status: z
      .string()
      .describe(
        'A user message: started, pending, queued (waiting for a run), delivered, retracted or rolled_back (its run was rolled back); "" for the agent’s (rolled_back when its run was).',
      ),
    producer: z.record(z.string(), z.unknown()).describe('Who wrote it: {kind, id, keyId}.'),
    toolCalls: z.array(z.record(z.string(), z.unknown())).describe('The agent’s tool calls in this message: {id, name, arguments}.'),
    createdAt: Timestamp,
    editedAt: Nullable(Timestamp),
  })
  .meta({ id: 'ThreadMessage' });

export const messageJson = (m: agents_threads.ThreadMessage) => ({
  id: m.id,
  seq: Number(m.seq),
  role: m.role as 'user' | 'assistant',
  content: m.content,
  runId: m.runId ?? null,
  status: m.status,
  producer: JSON.parse(m.producerJson || '{}') as Record<string, unknown>,
  toolCalls: JSON.parse(m.toolCallsJson || '[]') as Record<string, unknown>[],
  createdAt: m.createdAt,
  editedAt: m.editedAt ?? null,
});

export const Run = z
  .object({
    id: z.string(),
    threadId: z.string(),
    agentId: z.string(),
    status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']),
    steps: z.number().int().describe('Model turns taken.'),
    usage: Usage,
    toolCalls: z.number().int().describe('Tool calls made.'),
    error: Nullable(z.object({ code: z.string(), message: z.string() })).describe('Why a failed run failed.'),
    startedBy: z.record(z.string(), z.unknown()).describe('Who started it: {kind, id, keyId}.'),
    cancelRequested: z.boolean(),
    rolledBackSeq: Nullable(z.number().int()).describe(
      'When a message rolled the run back (inject mode rollback): the seq of its run.rolled_back event; its progress is out of the conversation.',
    ),
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    endedAt: Nullable(Timestamp),
  })
  .meta({ id: 'Run' });

export const runJson = (r: agents_threads.Run) => ({
  id: r.id,
  threadId: r.threadId,
  agentId: r.agentId,
  status: r.status as 'queued' | 'running' | 'completed' | 'failed' | 'cancelled',
  steps: r.steps,
  usage: { inputTokens: Number(r.usage?.inputTokens ?? 0), outputTokens: Number(r.usage?.outputTokens ?? 0), cost: r.usage?.cost || '0' },
  toolCalls: r.toolCalls,
  error: r.errorJson ? (JSON.parse(r.errorJson) as { code: string; message: string }) : null,
  startedBy: JSON.parse(r.startedByJson || '{}') as Record<string, unknown>,
  cancelRequested: r.cancelRequested,
  rolledBackSeq: r.rolledBackSeq ?? null,
  createdAt: r.createdAt,
  startedAt: r.startedAt ?? null,
  endedAt: r.endedAt ?? null,
});

const ToolCall = z
  .object({
    callId: z.string(),
    runId: z.string(),
    step: z.number().int(),
    name: z.string().describe('The tool.'),
    arguments: z.unknown().describe('The arguments the agent gave.'),
    status: z.enum(['started', 'done']),
    result: z.unknown().describe('The tool’s structured result (null while started).'),
    isError: z.boolean(),
    aborted: z
      .boolean()
      .describe('A cancel, an interrupt or a rollback stopped the call, or it was never begun (the result is the error tool_aborted).'),
    createdAt: Timestamp,
    finishedAt: Nullable(Timestamp),
  })
  .meta({ id: 'ToolCall' });

const params = z.object({ id: ThreadId });
const msgParams = z.object({ id: ThreadId, messageId: MessageId });
const runParams = z.object({ id: ThreadId, runId: RunId });
const ref = (i: RouteInput<{ id: string }>) => ({ threadId: i.params.id });
const runRef = (i: RouteInput<{ id: string; runId: string }>) => ({ threadId: i.params.id, runId: i.params.runId });
const msgRef = (i: RouteInput<{ id: string; messageId: string }>) => ({ threadId: i.params.id, messageId: i.params.messageId });
const common = { tag: 'threads', auth: 'key' as const, principals: ['human', 'agent'] as ['human', 'agent'], authority: false as const };

export const threadMessagesRoutes = [
  route({
    ...common,
    id: 'threads.messages.list',
    method: 'get',
    path: '/threads/:id/messages',
    summary: 'The thread’s messages (the user’s and the agent’s, without the other events), oldest first.',
    errors: ['thread_not_found'],
    params,
    query: ListQuery.extend({ role: z.enum(['user', 'assistant']).optional().describe('Only this role’s messages.') }),
    response: z.object({ messages: z.array(ThreadMessage), nextCursor: Nullable(z.string()) }).meta({ id: 'ThreadMessageList' }),
    handler: {
      rpc: 'agents.listThreadMessages',
      request: (i) => ({ threadId: i.params.id, limit: i.query.limit, cursor: i.query.cursor, role: i.query.role }),
      response: (res) => ({ messages: res.messages.map(messageJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'threads.messages.pending',
    method: 'get',
    path: '/threads/:id/pending-messages',
    summary: 'Messages still waiting for a run (pending: for the running run’s next step; queued: for a run after it), oldest first.',
    errors: ['thread_not_found'],
    params,
    response: z.object({ messages: z.array(ThreadMessage) }).meta({ id: 'PendingMessages' }),
    handler: { rpc: 'agents.listPendingMessages', request: ref, response: (res) => ({ messages: res.messages.map(messageJson) }) },
  }),
  route({
    ...common,
    id: 'threads.messages.get',
    method: 'get',
    path: '/threads/:id/messages/:messageId',
    summary: 'One message of the thread, with its delivery status.',
    errors: ['thread_not_found'],
    params: msgParams,
    response: ThreadMessage,
    handler: { rpc: 'agents.getThreadMessage', request: msgRef, response: (res) => messageJson(res.message!) },
  }),
  route({
    ...common,
    id: 'threads.messages.update',
    statuses: { 409: 'The message is started: only a message still waiting for a run can change (`message_not_waiting`).' },
    method: 'patch',
    effect: 'updates',
    path: '/threads/:id/messages/:messageId',
    summary: 'Edit a message still waiting for a run (409 message_not_waiting once a run took it).',
    errors: ['message_not_waiting', 'thread_not_found'],
    params: msgParams,
    body: z
      .object({ content: z.string().min(1, 'must not be empty').describe('The new text (at most 32000 characters).') })
      .strict()
      .meta({ id: 'EditMessageRequest' }),
    response: ThreadMessage,
    handler: {
      rpc: 'agents.editThreadMessage',
      request: (i) => ({ ...msgRef(i), content: i.body.content }),
      response: (res) => messageJson(res.message!),
    },
  }),
  route({
    ...common,
    id: 'threads.messages.retract',
    statuses: { 409: 'The message is started: only a message still waiting for a run can change (`message_not_waiting`).' },
    method: 'delete',
    path: '/threads/:id/messages/:messageId',
    summary: 'Retract a message still waiting for a run: no run will see it (409 message_not_waiting once a run took it; again: no change).',
    errors: ['message_not_waiting', 'thread_not_found'],
    params: msgParams,
    response: z.object({ messageId: z.string(), status: z.literal('retracted') }).meta({ id: 'RetractedMessage' }),
    handler: {
      rpc: 'agents.retractThreadMessage',
      request: msgRef,
      response: (res) => ({ messageId: res.messageId, status: 'retracted' as const }),
    },
  }),
  route({
    ...common,
    id: 'threads.getEvent',
    method: 'get',
    path: '/threads/:id/events/:seq',
    summary: 'One event of a thread by its seq: its type, data, producer and the run it belongs to.',
    errors: ['event_not_found', 'thread_not_found'],
    params: z.object({
      id: ThreadId,
      seq: z
        .string()
        .regex(/^[1-9]\d{0,14}$/, 'must be a seq (1, 2, 3…)')
        .describe('The event’s seq (1, 2, 3…).'),
    }),
    response: ThreadEvent,
    handler: {
      rpc: 'agents.getThreadEvent',
      request: (i) => ({ threadId: i.params.id, seq: Number(i.params.seq) }),
      response: (res) => threadEventJson(res.event!),
    },
  }),
  route({
    ...common,
    id: 'threads.runs.list',
    method: 'get',
    path: '/threads/:id/runs',
    summary: 'The thread’s runs, newest first: status, steps, usage, error.',
    errors: ['thread_not_found'],
    params,
    query: ListQuery,
    response: z.object({ runs: z.array(Run), nextCursor: Nullable(z.string()) }).meta({ id: 'RunList' }),
    handler: {
      rpc: 'agents.listThreadRuns',
      request: (i) => ({ threadId: i.params.id, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ runs: res.runs.map(runJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'threads.runs.get',
    method: 'get',
    path: '/threads/:id/runs/:runId',
    summary: 'One run of the thread: its status, steps, usage and error.',
    errors: ['run_not_found', 'thread_not_found'],
    params: runParams,
    response: Run,
    handler: { rpc: 'agents.getThreadRun', request: runRef, response: (res) => runJson(res.run!) },
  }),
  route({
    ...common,
    id: 'threads.runs.toolCalls',
    method: 'get',
    path: '/threads/:id/runs/:runId/tool-calls',
    summary: 'The tool calls of a run, in order: arguments, result, error.',
    errors: ['thread_not_found'],
    params: runParams,
    response: z.object({ toolCalls: z.array(ToolCall) }).meta({ id: 'ToolCallList' }),
    handler: {
      rpc: 'agents.listRunToolCalls',
      request: runRef,
      response: (res) => ({
        toolCalls: res.toolCalls.map((c) => ({
          callId: c.callId,
          runId: c.runId,
          step: c.step,
          name: c.name,
          arguments: JSON.parse(c.argumentsJson || 'null') as unknown,
          status: c.status as 'started' | 'done',
          result: JSON.parse(c.resultJson || 'null') as unknown,
          isError: c.isError,
          aborted: c.aborted,
          createdAt: c.createdAt,
          finishedAt: c.finishedAt ?? null,
        })),
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.runs.context',
    method: 'get',
    path: '/threads/:id/runs/:runId/context',
    summary: 'The model context of a run as of its last checkpoint: the messages the model was given (system, user, assistant, tool).',
    errors: ['thread_not_found'],
    params: runParams,
    response: z
      .object({
        step: z.number().int(),
        messages: z.array(
          z
            .object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })
            .loose()
            .describe('toolCalls, toolCallId, name when set.'),
        ),
      })
      .meta({ id: 'RunContext' }),
    handler: {
      rpc: 'agents.getRunContext',
      request: runRef,
      response: (res) => ({
        step: res.step,
        messages: JSON.parse(res.messagesJson || '[]') as { role: 'system' | 'user' | 'assistant' | 'tool'; content: string }[],
      }),
    },
  }),
  route({
    ...common,
    id: 'threads.toolCalls.summary',
    method: 'get',
    path: '/threads/:id/tool-calls/summary',
    summary: 'The tools the thread’s runs called: calls and errors per tool, most called first.',
    errors: ['thread_not_found'],
    params,
    response: z
      .object({
        calls: z.number().int(),
        errors: z.number().int(),
        tools: z.array(z.object({ name: z.string(), calls: z.number().int(), errors: z.number().int(), lastCalledAt: Timestamp })),
      })
      .meta({ id: 'ToolCallSummary' }),
    handler: {
      rpc: 'agents.getToolCallSummary',
      request: ref,
      response: (res) => ({ calls: res.calls, errors: res.errors, tools: res.tools }),
    },
  }),
];
