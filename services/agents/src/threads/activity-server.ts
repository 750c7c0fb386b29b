import type { Handlers } from '@svc/kit';
import type { agents_threads } from '@svc/proto';

import type { ThreadExtras } from './activity.js';
import { toMessage, toRun } from './manage-server.js';
import { toEvent, toThread } from './server.js';

type Def = typeof agents_threads.ThreadsServiceService;
type ExtrasHandlers = Pick<
  Handlers<Def>,
  | 'searchThreadMessages'
  | 'patchThreadMetadata'
  | 'clearPendingMessages'
  | 'listAccountRuns'
  | 'getAccountUsage'
  | 'listThreadParticipants'
  | 'askThread'
  | 'archiveIdleThreads'
  | 'waitThreadEvents'
  | 'listRunSteps'
>;

/** gRPC handlers of the account-wide and housekeeping thread operations. */
export function threadExtrasHandlers(x: ThreadExtras): ExtrasHandlers {
  return {
    async searchThreadMessages(req, { principal }) {
      return { messages: (await x.searchMessages(principal, req.threadId, req.query, req.limit)).map(toMessage) };
    },
    async patchThreadMetadata(req, { principal }) {
      return { thread: toThread(await x.patchMetadata(principal, req.threadId, req.patchJson)) };
    },
    async clearPendingMessages(req, { principal }) {
      return { messageIds: await x.clearPending(principal, req.threadId) };
    },
    async listAccountRuns(req, { principal }) {
      const r = await x.accountRuns(principal, req);
      return { runs: r.runs.map(toRun), nextCursor: r.nextCursor };
    },
    async getAccountUsage(req, { principal }) {
      const lines = await x.usage(principal, req.since);
      const sum = (f: (l: (typeof lines)[number]) => string) => lines.reduce((n, l) => n + Number(f(l)), 0);
      const cost = lines.reduce((n, l) => n + Number(l.cost), 0);
      return {
        total: { inputTokens: sum((l) => l.input_tokens), outputTokens: sum((l) => l.output_tokens), cost: String(Number(cost.toFixed(12))) },
        runs: lines.reduce((n, l) => n + l.runs, 0),
        agents: lines.map((l) => ({
          agentId: l.agent_id,
          threads: l.threads,
          runs: l.runs,
          failed: l.failed,
          usage: { inputTokens: Number(l.input_tokens), outputTokens: Number(l.output_tokens), cost: String(l.cost) },
        })),
      };
    },
    async listThreadParticipants(req, { principal }) {
      const rows = await x.participants(principal, req.threadId);
      return {
        participants: rows.map((r) => ({
          kind: r.kind,
          id: r.id,
          events: r.events,
          messages: r.messages,
          firstAt: new Date(r.first_at).toISOString(),
          lastAt: new Date(r.last_at).toISOString(),
        })),
      };
    },
    async askThread(req, { principal }) {
      const r = await x.ask(principal, req.threadId, req.content, req.timeoutMs);
      return {
        messageId: r.messageId,
        runId: r.runId ?? undefined,
        status: r.status,
        timedOut: r.timedOut,
        reply: r.reply ? toMessage(r.reply) : undefined,
      };
    },
    async archiveIdleThreads(req, { principal }) {
      return { threadIds: await x.archiveIdle(principal, req.olderThanDays, req.agentId) };
    },
    async waitThreadEvents(req, { principal }) {
      const r = await x.waitEvents(principal, req.threadId, {
        after: Number(req.after),
        types: req.types,
        timeoutMs: req.timeoutMs,
        limit: req.limit,
      });
      return { events: r.events.map(toEvent), timedOut: r.timedOut, lastSeq: r.lastSeq };
    },
    async listRunSteps(req, { principal }) {
      const steps = await x.steps(principal, req.threadId, req.runId);
      return {
        steps: steps.map((s) => ({
          step: s.step,
          at: s.at.toISOString(),
          interrupted: s.interrupted,
          usageJson: s.usage ? JSON.stringify(s.usage) : '',
          toolsCalled: s.tools,
          toolErrors: s.errors,
        })),
      };
    },
  };
}
