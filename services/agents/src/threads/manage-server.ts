import type { Handlers } from '@svc/kit';
import type { agents_threads } from '@svc/proto';

import type { MessageView, ThreadOps } from './manage.js';
import type { ToolCallFullRow } from './manage-store.js';
import { toEvent, toThread } from './server.js';
import type { RunRow } from './store.js';

type Def = typeof agents_threads.ThreadsServiceService;
type OpsHandlers = Pick<
  Handlers<Def>,
  | 'listThreadMessages'
  | 'getThreadMessage'
  | 'editThreadMessage'
  | 'retractThreadMessage'
  | 'listPendingMessages'
  | 'getThreadEvent'
  | 'listThreadRuns'
  | 'getThreadRun'
  | 'listRunToolCalls'
  | 'getRunContext'
  | 'getToolCallSummary'
  | 'forkThread'
  | 'editEarlierMessage'
  | 'archiveThread'
  | 'unarchiveThread'
  | 'searchThreads'
  | 'exportThread'
  | 'getThreadUsage'
  | 'waitThread'
  | 'addThreadTag'
  | 'removeThreadTag'
  | 'listThreadTags'
  | 'getLastReply'
  | 'retryThread'
  | 'listDeletedThreads'
  | 'restoreThread'
  | 'setThreadAgent'
  | 'getThreadSummary'
>;

export function toMessage(m: MessageView): agents_threads.ThreadMessage {
  return {
    id: m.id,
    seq: m.seq,
    role: m.role,
    content: m.content,
    runId: m.runId ?? undefined,
    status: m.status,
    producerJson: JSON.stringify(m.producer),
    createdAt: m.createdAt.toISOString(),
    toolCallsJson: JSON.stringify(m.toolCalls),
    editedAt: m.editedAt?.toISOString(),
  };
}

export function toRun(r: RunRow & { tool_calls: number }): agents_threads.Run {
  return {
    id: r.id,
    threadId: r.thread_id,
    agentId: r.agent_id,
    status: r.status,
    steps: r.step,
    usage: { inputTokens: Number(r.input_tokens), outputTokens: Number(r.output_tokens), cost: String(r.cost) },
    errorJson: r.error ? JSON.stringify(r.error) : '',
    startedByJson: JSON.stringify(r.started_by),
    cancelRequested: r.cancel_requested,
    createdAt: r.created_at.toISOString(),
    startedAt: r.started_at?.toISOString(),
    endedAt: r.ended_at?.toISOString(),
    toolCalls: r.tool_calls,
    rolledBackSeq: r.rolled_back_seq ?? undefined,
  };
}

export const toToolCall = (c: ToolCallFullRow): agents_threads.ToolCall => ({
  runId: c.run_id,
  callId: c.call_id,
  step: c.step,
  name: c.name,
  argumentsJson: JSON.stringify(c.arguments ?? null),
  status: c.status,
  resultJson: JSON.stringify(c.result ?? null),
  isError: c.is_error,
  aborted: c.aborted === true,
  createdAt: c.created_at.toISOString(),
  finishedAt: c.finished_at?.toISOString(),
});

/** gRPC handlers of the thread operations: translate messages, let ThreadOps decide. */
export function threadOpsHandlers(ops: ThreadOps): OpsHandlers {
  return {
    async listThreadMessages(req, { principal }) {
      const r = await ops.messages(principal, req.threadId, req);
      return { messages: r.messages.map(toMessage), nextCursor: r.nextCursor };
    },
    async getThreadMessage(req, { principal }) {
      return { message: toMessage(await ops.message(principal, req.threadId, req.messageId)) };
    },
    async editThreadMessage(req, { principal }) {
      return { message: toMessage(await ops.edit(principal, req.threadId, req.messageId, req.content)) };
    },
    async retractThreadMessage(req, { principal }) {
      await ops.retract(principal, req.threadId, req.messageId);
      return { messageId: req.messageId, status: 'retracted' };
    },
    async listPendingMessages(req, { principal }) {
      return { messages: (await ops.pending(principal, req.threadId)).map(toMessage) };
    },
    async getThreadEvent(req, { principal }) {
      return { event: toEvent(await ops.event(principal, req.threadId, Number(req.seq))) };
    },
    async listThreadRuns(req, { principal }) {
      const r = await ops.runs(principal, req.threadId, req);
      return { runs: r.runs.map(toRun), nextCursor: r.nextCursor };
    },
    async getThreadRun(req, { principal }) {
      return { run: toRun(await ops.run(principal, req.threadId, req.runId)) };
    },
    async listRunToolCalls(req, { principal }) {
      return { toolCalls: (await ops.toolCalls(principal, req.threadId, req.runId)).map(toToolCall) };
    },
    async getRunContext(req, { principal }) {
      const r = await ops.run(principal, req.threadId, req.runId);
      return { messagesJson: JSON.stringify(r.context), step: r.step };
    },
    async getToolCallSummary(req, { principal }) {
      const rows = await ops.toolSummary(principal, req.threadId);
      return {
        tools: rows.map((r) => ({ name: r.name, calls: r.calls, errors: r.errors, lastCalledAt: new Date(r.last_called_at).toISOString() })),
        calls: rows.reduce((n, r) => n + r.calls, 0),
        errors: rows.reduce((n, r) => n + r.errors, 0),
      };
    },
    async forkThread(req, { principal }) {
      return { thread: toThread(await ops.fork(principal, req.threadId, { atSeq: Number(req.atSeq), title: req.title })) };
    },
    async editEarlierMessage(req, { principal }) {
      const r = await ops.editEarlier(principal, req.threadId, req.messageId, { content: req.content, title: req.title });
      return { thread: toThread(r.thread), runId: r.runId, messageId: r.messageId, replacedMessageId: r.replacedMessageId };
    },
    async archiveThread(req, { principal }) {
      return { thread: toThread(await ops.setArchived(principal, req.threadId, true)) };
    },
    async unarchiveThread(req, { principal }) {
      return { thread: toThread(await ops.setArchived(principal, req.threadId, false)) };
    },
    async searchThreads(req, { principal }) {
      const r = await ops.search(principal, req);
      return {
        matches: r.matches.map((m) => ({ thread: toThread(m), snippet: m.snippet ?? '', seq: m.snippet_seq ?? 0 })),
        nextCursor: r.nextCursor,
      };
    },
    async exportThread(req, { principal }) {
      return ops.export(principal, req.threadId, req.format);
    },
    async getThreadUsage(req, { principal }) {
      const r = await ops.usage(principal, req.threadId);
      return {
        total: { inputTokens: Number(r.thread.input_tokens), outputTokens: Number(r.thread.output_tokens), cost: String(r.thread.cost) },
        byModel: r.byModel.map((u) => ({
          model: u.model,
          inputTokens: Number(u.input_tokens),
          outputTokens: Number(u.output_tokens),
          cost: String(u.cost),
          turns: u.turns,
        })),
        runs: r.runs.map(toRun),
      };
    },
    async waitThread(req, { principal }) {
      const r = await ops.wait(principal, req.threadId, req.timeoutMs);
      return { thread: toThread(r.thread), timedOut: r.timedOut, lastReply: r.lastReply ? toMessage(r.lastReply) : undefined };
    },
    async addThreadTag(req, { principal }) {
      return { thread: toThread(await ops.tag(principal, req.threadId, req.tag, true)) };
    },
    async removeThreadTag(req, { principal }) {
      return { thread: toThread(await ops.tag(principal, req.threadId, req.tag, false)) };
    },
    async listThreadTags(_req, { principal }) {
      return { tags: await ops.tags(principal) };
    },
    async getLastReply(req, { principal }) {
      const m = await ops.lastReply(principal, req.threadId);
      return { message: m ? toMessage(m) : undefined };
    },
    async retryThread(req, { principal }) {
      return ops.retry(principal, req.threadId);
    },
    async listDeletedThreads(req, { principal }) {
      const r = await ops.deleted(principal, req);
      return { threads: r.threads.map((t) => ({ thread: toThread(t), deletedAt: t.deleted_at!.toISOString() })), nextCursor: r.nextCursor };
    },
    async restoreThread(req, { principal }) {
      return { thread: toThread(await ops.restore(principal, req.threadId)) };
    },
    async setThreadAgent(req, { principal }) {
      return { thread: toThread(await ops.setAgent(principal, req.threadId, req.agentId)) };
    },
    async getThreadSummary(req, { principal }) {
      const r = await ops.summary(principal, req.threadId);
      return {
        thread: toThread(r.thread),
        userMessages: r.counts.user_messages,
        agentMessages: r.counts.agent_messages,
        pendingMessages: r.counts.pending_messages,
        runs: r.counts.runs,
        failedRuns: r.counts.failed_runs,
        toolCalls: r.counts.tool_calls,
        toolErrors: r.counts.tool_errors,
        firstMessage: r.first ? toMessage(r.first) : undefined,
        lastReply: r.lastReply ? toMessage(r.lastReply) : undefined,
        lastErrorJson: r.lastError ? JSON.stringify(r.lastError) : undefined,
      };
    },
  };
}
