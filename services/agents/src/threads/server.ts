import type { Handlers } from '@svc/kit';
import type { agents_threads } from '@svc/proto';

import { type LiveEvents, watchEvents, type WireEvent } from './live.js';
import type { EventRow, ThreadRow } from './store.js';
import type { ThreadsDomain } from './threads.js';

type Def = typeof agents_threads.ThreadsServiceService;
type ThreadHandlers = Pick<
  Handlers<Def>,
  | 'createThread'
  | 'listThreads'
  | 'getThread'
  | 'updateThread'
  | 'deleteThread'
  | 'listThreadEvents'
  | 'watchThreadEvents'
  | 'injectMessage'
  | 'cancelRun'
>;

export function toThread(t: ThreadRow): agents_threads.Thread {
  return {
    id: t.id,
    accountId: t.account_id,
    projectId: t.project_id ?? undefined,
    agentId: t.agent_id,
    title: t.title ?? undefined,
    metadataJson: JSON.stringify(t.metadata),
    status: t.status,
    currentRunId: t.current_run_id ?? undefined,
    lastSeq: Number(t.last_seq),
    usage: { inputTokens: Number(t.input_tokens), outputTokens: Number(t.output_tokens), cost: t.cost },
    createdAt: t.created_at.toISOString(),
    updatedAt: t.updated_at.toISOString(),
    lastActivityAt: t.last_activity_at.toISOString(),
    archivedAt: t.archived_at?.toISOString(),
    tags: t.tags ?? [],
    forkedFromThreadId: t.forked_from_thread_id ?? undefined,
    forkedAtSeq: t.forked_at_seq === null || t.forked_at_seq === undefined ? undefined : Number(t.forked_at_seq),
  };
}

export function toEvent(e: EventRow | WireEvent): agents_threads.ThreadEvent {
  return {
    id: e.id,
    seq: Number(e.seq),
    type: e.type,
    createdAt: typeof e.created_at === 'string' ? e.created_at : e.created_at.toISOString(),
    producerJson: JSON.stringify(e.producer),
    dataJson: JSON.stringify(e.data),
    usageJson: e.usage ? JSON.stringify(e.usage) : undefined,
    runId: e.run_id ?? undefined,
  };
}

/** gRPC handlers of threads: translate messages, let the domain decide. */
export function threadHandlers(domain: ThreadsDomain, live: LiveEvents): ThreadHandlers {
  return {
    async createThread(req, { principal }) {
      const { thread, runId } = await domain.create(principal, req);
      return { thread: toThread(thread), runId: runId ?? undefined };
    },
    async listThreads(req, { principal }) {
      const { rows, nextCursor } = await domain.list(principal, req);
      return { threads: rows.map(toThread), nextCursor };
    },
    async getThread(req, { principal }) {
      return { thread: toThread(await domain.get(principal, req.id)) };
    },
    async updateThread(req, { principal }) {
      return { thread: toThread(await domain.update(principal, req.id, req)) };
    },
    async deleteThread(req, { principal }) {
      return { cancelledRunId: (await domain.remove(principal, req.id)) ?? undefined };
    },
    async listThreadEvents(req, { principal }) {
      const { rows, nextAfter } = await domain.events(principal, req.threadId, Number(req.after), req.limit);
      return { events: rows.map(toEvent), nextAfter };
    },
    async *watchThreadEvents(req, { principal, signal }) {
      await domain.get(principal, req.threadId);
      for await (const item of watchEvents(domain.store, live, req.threadId, Number(req.after), signal)) {
        if (item.kind === 'event') yield toEvent(item.event);
        else {
          yield {
            id: '',
            seq: 0,
            type: 'message.delta',
            createdAt: new Date().toISOString(),
            producerJson: '{"kind":"agent"}',
            dataJson: JSON.stringify({ runId: item.runId, step: item.step, text: item.text }),
            runId: item.runId,
          };
        }
      }
    },
    async injectMessage(req, { principal }) {
      const r = await domain.inject(principal, req.threadId, req);
      return { messageId: r.message.id, status: r.status, runId: r.runId ?? undefined, seq: r.seq, rolledBackRunId: r.rolledBackRunId };
    },
    async cancelRun(req, { principal }) {
      const r = await domain.cancel(principal, req.threadId);
      return { runId: r.runId ?? undefined, status: r.status };
    },
  };
}
