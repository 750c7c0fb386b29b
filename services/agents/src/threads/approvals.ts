import { z } from 'zod';

import { type Actor, actorOf, DomainError, enqueueEvent, newId, parseInput, type Principal, type Queryable, requireAuthority } from '@svc/kit';
import { toolAllowed } from '@svc/tools';

import { SCHEMA } from '../agents/store.js';
import { type ApprovalRow, type ApprovalStatus, ApprovalStore, type PolicyRow } from './approvals-store.js';
import type { InboxRow, NewEvent, Producer, RunRow, ThreadRow } from './store.js';
import { producerOf, type ThreadsDomain } from './threads.js';

/**
 * Approvals and questions to a person (docs/threads.md, "Approvals"). A person sets which tools
 * need approval, per agent and per thread (the thread's list replaces the agent's). The runtime
 * pauses a run before such a call (`approval.requested`; no worker holds the run while it waits)
 * and when the agent asks its person a question (`ask_person`, `question.asked`). A person approves
 * (with edited arguments or not) or rejects with a reason through the API, never an agent key nor
 * the MCP channel; a message to the thread answers a question. Either wakes the run, which any
 * worker resumes from its checkpoint. A request unanswered by its expiry counts as rejected.
 */

export const ASK_PERSON = 'ask_person';
const APPROVAL_ID_RE = /^apr_[0-9a-z]{26}$/;
const SYSTEM: Producer = { kind: 'system', id: 'runtime', keyId: null };
const Patterns = z
  .array(z.string().regex(/^[a-z0-9_*]{1,100}$/, 'must be a tool name or a pattern with * (a-z, 0-9, _)'))
  .max(200, 'may hold at most 200 names or patterns');
const Reason = z.string().trim().max(2000, 'must be at most 2000 characters');

/**
 * The reason of a request withdrawn by an interrupting message (docs/threads.md, "Approvals"): the
 * runtime records its call as not run (`tool_aborted`, by the interrupt) and delivers the message.
 */
export const WITHDRAWN_BY_INTERRUPT = 'Withdrawn: a new message from the person interrupted the run; the call was not run.';

const notFound = () => new DomainError('not_found', 'approval_not_found', 'Approval not found.');

/** Whether a call of `tool` waits for a person's approval under these patterns (ask_person never does). */
export function needsApproval(patterns: string[], tool: string): boolean {
  return tool !== ASK_PERSON && patterns.length > 0 && toolAllowed(patterns, tool);
}

export class ApprovalsDomain {
  readonly store: ApprovalStore;

  constructor(private readonly threads: ThreadsDomain) {
    this.store = new ApprovalStore(threads.store.sql);
  }

  /** The patterns in force for a thread's calls: the thread's own list, or its agent's, or none. */
  async patternsFor(agentId: string, threadId: string, q: Queryable = this.store.sql): Promise<string[]> {
    const own = await this.store.policy(threadId, q);
    if (own) return own.tools;
    return (await this.store.policy(agentId, q))?.tools ?? [];
  }

  async agentPolicy(p: Principal, agentId: string): Promise<{ agentId: string; tools: string[]; updatedAt: Date | null }> {
    const agent = await this.threads.agentFor(p, agentId);
    const row = await this.store.policy(agent.id);
    return { agentId: agent.id, tools: row?.tools ?? [], updatedAt: row?.updated_at ?? null };
  }

  async setAgentPolicy(p: Principal, agentId: string, tools: string[]) {
    requireAuthority(p, 'Approval policies are set');
    const agent = await this.threads.agentFor(p, agentId);
    const list = parseInput(Patterns, tools, { where: 'tools' });
    const row = await this.store.sql.tx(async (q) => {
      const r = await this.store.setPolicy(q, { subject_id: agent.id, account_id: agent.owner_account_id, tools: list, updated_by: actorOf(p) });
      await audit(q, 'approval_policy_updated', agent, actorOf(p), { tools: list, threadId: null });
      return r;
    });
    return { agentId: agent.id, tools: row.tools, updatedAt: row.updated_at };
  }

  async threadPolicy(p: Principal, threadId: string) {
    const t = await this.threads.get(p, threadId);
    return this.threadPolicyView(t, await this.store.policy(t.id), await this.store.policy(t.agent_id));
  }

  /** Sets the thread's own list (null: its agent's applies again), with an `approval_policy.updated` event. */
  async setThreadPolicy(p: Principal, threadId: string, tools: string[] | null) {
    requireAuthority(p, 'Approval policies are set');
    const t = await this.threads.get(p, threadId);
    const list = tools === null ? null : parseInput(Patterns, tools, { where: 'tools' });
    const events = await this.store.sql.tx(async (q) => {
      if (!(await this.threads.store.thread(threadId, q, true))) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      if (list === null) await this.store.deletePolicy(q, t.id);
      else await this.store.setPolicy(q, { subject_id: t.id, account_id: t.account_id, tools: list, updated_by: actorOf(p) });
      const agent = { id: t.agent_id, owner_account_id: t.account_id };
      await audit(q, 'approval_policy_updated', agent, actorOf(p), { tools: list, threadId: t.id });
      return this.threads.append(q, t.id, [{ type: 'approval_policy.updated', producer: producerOf(p), data: { tools: list } }]);
    });
    await this.threads.after(t.id, events, null);
    return this.threadPolicyView(t, await this.store.policy(t.id), await this.store.policy(t.agent_id));
  }

  private threadPolicyView(t: ThreadRow, own: PolicyRow | null, agent: PolicyRow | null) {
    return { threadId: t.id, tools: own?.tools ?? agent?.tools ?? [], threadTools: own?.tools ?? null, agentTools: agent?.tools ?? [] };
  }

  /** A thread's requests (`threadId`), or the acting account's; oldest first. */
  async list(p: Principal, f: { threadId?: string; status?: string; limit?: number }): Promise<ApprovalRow[]> {
    if (f.threadId) await this.threads.get(p, f.threadId);
    const status = f.status ? (parseInput(StatusQuery, f.status, { where: 'status' }) as ApprovalStatus) : undefined;
    return this.store.list({
      threadId: f.threadId,
      accountId: p.accountId,
      projectId: p.projectId,
      status,
      limit: Math.min(Math.max(f.limit || 50, 1), 200),
    });
  }

  async get(p: Principal, threadId: string, id: string): Promise<ApprovalRow> {
    await this.threads.get(p, threadId);
    const a = APPROVAL_ID_RE.test(id) ? await this.store.get(id) : null;
    if (!a || a.thread_id !== threadId) throw notFound();
    return a;
  }

  /**
   * A person's decision on a pending approval: approved (with `args` replacing the call's arguments
   * when given) or rejected with a reason the model sees. Wakes the run, which a worker resumes.
   */
  async decide(p: Principal, threadId: string, id: string, d: { approve: boolean; args?: unknown; reason?: string }): Promise<ApprovalRow> {
    // Who may decide comes first: an agent or the MCP channel is refused whatever the request.
    requireAuthority(p, 'Tool calls are approved or rejected');
    await this.get(p, threadId, id);
    if (d.args !== undefined && (d.args === null || typeof d.args !== 'object' || Array.isArray(d.args))) {
      throw new DomainError('invalid_argument', 'invalid_request', 'arguments: must be a JSON object.');
    }
    const reason = d.reason === undefined ? null : parseInput(Reason, d.reason, { where: 'reason' }) || null;
    const producer = producerOf(p);
    const out = await this.store.sql.tx(async (q) => {
      const t = await this.threads.store.thread(threadId, q, true);
      if (!t) throw new DomainError('not_found', 'thread_not_found', 'Thread not found.');
      const a = await this.store.get(id, q, true);
      if (!a || a.kind !== 'approval') throw notFound();
      if (a.status !== 'pending') {
        throw new DomainError('conflict', 'approval_not_pending', `The approval is ${a.status} already.`, { status: a.status });
      }
      if (a.expires_at.getTime() <= Date.now()) throw new DomainError('conflict', 'approval_expired', 'The approval expired; it counts as rejected.');
      const decided = (await this.store.decide(q, id, {
        status: d.approve ? 'approved' : 'rejected',
        by: actorOf(p),
        editedArguments: d.approve ? d.args : undefined,
        reason,
      }))!;
      const events = await this.threads.append(q, threadId, [decisionEvent(decided, producer)]);
      await this.store.wakeRun(q, a.run_id);
      await audit(q, d.approve ? 'approval_approved' : 'approval_rejected', { id: a.agent_id, owner_account_id: a.account_id }, actorOf(p), {
        approvalId: a.id,
        threadId,
        runId: a.run_id,
        tool: a.tool,
        edited: d.args !== undefined,
        reason,
      });
      return { decided, events };
    });
    await this.threads.after(threadId, out.events, null);
    await this.threads.enqueueAgain(out.decided.run_id, out.decided.id);
    return out.decided;
  }

  /**
   * In a message's transaction (ThreadsDomain.inject) while the run waits for the agent's question
   * to be answered: the message is the answer. Null when the run waits for nothing of the kind.
   */
  async answer(q: Queryable, t: ThreadRow, run: RunRow, message: InboxRow): Promise<NewEvent[] | null> {
    if (run.waiting_for !== 'answer') return null;
    const question = await this.store.pendingOfRun(q, run.id);
    if (!question || question.kind !== 'question') return null;
    const answered = (await this.store.decide(q, question.id, {
      status: 'answered',
      by: null,
      answer: message.content,
      answerMessageId: message.id,
    }))!;
    await this.store.wakeRun(q, run.id);
    return [decisionEvent(answered, message.producer)];
  }

  /** Expires the requests past their time (the runtime's sweep): each counts as rejected and wakes its run. */
  async expireDue(limit = 100): Promise<number> {
    let n = 0;
    for (const due of await this.store.due(limit)) {
      const out = await this.store.sql.tx(async (q) => {
        if (!(await this.threads.store.lockThread(q, due.thread_id))) return null;
        const expired = await this.store.decide(q, due.id, { status: 'expired', by: null, reason: 'No person answered before it expired.' });
        if (!expired) return null;
        const events = await this.threads.append(q, due.thread_id, [decisionEvent(expired, SYSTEM)]);
        await this.store.wakeRun(q, due.run_id);
        if (expired.kind === 'approval') {
          const actor: Actor = { kind: 'system', id: 'runtime', keyId: null, channel: 'api', accountId: due.account_id };
          await audit(q, 'approval_expired', { id: due.agent_id, owner_account_id: due.account_id }, actor, {
            approvalId: due.id,
            threadId: due.thread_id,
            runId: due.run_id,
            tool: due.tool,
          });
        }
        return events;
      });
      if (!out) continue;
      n++;
      await this.threads.after(due.thread_id, out, null);
      await this.threads.enqueueAgain(due.run_id, due.id);
    }
    return n;
  }

  /** A paused run made claimable and put back on the work queue (a cancel of a run waiting for a person). */
  async wake(runId: string): Promise<void> {
    const woken = await this.store.sql.tx((q) => this.store.wakeRun(q, runId));
    if (woken) await this.threads.enqueueAgain(runId, newId('wake'));
  }

  /**
   * In an `interrupt` message's transaction (ThreadsDomain.inject) while the run waits for an
   * approval: the request is withdrawn (`cancelled` with WITHDRAWN_BY_INTERRUPT) and the run woken;
   * the caller puts it back on the work queue after the commit. No events when it waits for none.
   */
  async withdraw(q: Queryable, runId: string, by: Actor, producer: Producer): Promise<NewEvent[]> {
    const pending = await this.store.pendingOfRun(q, runId);
    if (!pending || pending.kind !== 'approval') return [];
    const withdrawn = await this.store.decide(q, pending.id, { status: 'cancelled', by, reason: WITHDRAWN_BY_INTERRUPT });
    if (!withdrawn) return [];
    await this.store.wakeRun(q, runId);
    return [decisionEvent(withdrawn, producer)];
  }

  /** Ends a run's pending requests when the run ends otherwise (cancel, rollback, deletion): their events. */
  async close(q: Queryable, runId: string, producer: Producer): Promise<NewEvent[]> {
    const closed = await this.store.closeForRun(q, runId);
    return closed.map((a) => decisionEvent(a, producer));
  }
}

const StatusQuery = z.enum(['pending', 'approved', 'rejected', 'expired', 'cancelled', 'answered'], {
  error: 'must be pending, approved, rejected, expired, cancelled or answered',
});

/** The event that records what became of a request. */
export function decisionEvent(a: ApprovalRow, producer: Producer): NewEvent {
  const base = { approvalId: a.id, runId: a.run_id, step: a.step, callId: a.call_id, tool: a.tool };
  const type = `${a.kind === 'question' ? 'question' : 'approval'}.${a.status}`;
  const data: Record<string, unknown> =
    a.status === 'approved'
      ? { ...base, arguments: a.edited_arguments ?? a.arguments, edited: a.edited_arguments !== null }
      : a.status === 'answered'
        ? { ...base, answer: a.answer, messageId: a.answer_message_id }
        : { ...base, reason: a.reason };
  return { type, runId: a.run_id, producer, data };
}

/** The request's event when the runtime pauses the run on it. */
export function requestEvent(a: ApprovalRow, producer: Producer): NewEvent {
  const base = { approvalId: a.id, runId: a.run_id, step: a.step, callId: a.call_id, tool: a.tool, expiresAt: a.expires_at.toISOString() };
  if (a.kind === 'question') {
    const question = (a.arguments as { question?: unknown } | null)?.question;
    return { type: 'question.asked', runId: a.run_id, producer, data: { ...base, question: typeof question === 'string' ? question : '' } };
  }
  return { type: 'approval.requested', runId: a.run_id, producer, data: { ...base, arguments: a.arguments } };
}

/**
 * An audit entry of the agent's account (accounts service, from the outbox: `agents.agent.<what>`),
 * with the agent's name (read in the same transaction when the caller has only its id).
 */
async function audit(
  q: Queryable,
  what: string,
  agent: { id: string; owner_account_id: string; name?: string | null },
  actor: Actor,
  data: Record<string, unknown>,
): Promise<void> {
  const name = agent.name ?? (await ApprovalStore.agentName(q, agent.id));
  await enqueueEvent(q, SCHEMA, {
    subject: `agents.agent.${what}`,
    accountId: agent.owner_account_id,
    data: { agent: { id: agent.id, name }, actor, ...data },
  });
}

export const newApprovalId = () => newId('apr');
