import { DomainError, type EventEnvelope, type Principal } from '@svc/kit';

import { ACCOUNT_ID_RE, AGENT_ID_RE } from './access.js';
import type { AccountStore, AgentRecordRow } from './store.js';

/**
 * The agents, as records the agents service keeps here: accounts needs an agent's existence
 * (grants to it), name and owner (the chain of authority) without calling the agents service,
 * which calls accounts (the call graph is a DAG: agents -> accounts -> keys). The agents service
 * writes a record when it creates an agent (before the agent exists, so that a grant right after
 * the creation finds it), changes one, deletes one, and for every agent when it starts; its events
 * write them again. Every record carries the agent's version, and only a newer one replaces it,
 * so repeats, late events and concurrent writers all end on the agents service's last commit.
 */
export class AgentDirectory {
  constructor(private readonly store: AccountStore) {}

  /** A live agent: its owner and name; null for an unknown or deleted one. */
  agent(id: string): Promise<AgentRecordRow | null> {
    return this.store.agentById(id);
  }

  async sync(p: Principal, records: Array<{ id: string; ownerAccountId: string; name: string; version: number; deleted: boolean }>): Promise<number> {
    systemOnly(p);
    const rows = new Map<string, AgentRecordRow>();
    for (const r of records) {
      if (!AGENT_ID_RE.test(r.id) || !ACCOUNT_ID_RE.test(r.ownerAccountId) || !r.name || !(r.version >= 1)) {
        throw new DomainError('invalid_argument', 'invalid_request', `agents: ${r.id} is not a valid agent record`);
      }
      const prev = rows.get(r.id);
      if (!prev || prev.version < r.version) {
        rows.set(r.id, { id: r.id, owner_account_id: r.ownerAccountId, name: r.name, version: r.version, deleted: r.deleted });
      }
    }
    return (await this.store.syncAgents(this.store.sql, [...rows.values()])).length;
  }

  async forget(p: Principal, id: string): Promise<void> {
    systemOnly(p);
    if (!AGENT_ID_RE.test(id)) throw new DomainError('invalid_argument', 'invalid_request', 'id: must be an agent id (agt_…)');
    await this.store.forgetAgent(id);
  }

  /** The record an agents.agent.* event carries (events from before records had versions carry none). */
  static recordOf(event: EventEnvelope): AgentRecordRow | null {
    const a = (event.data as { agent?: { id?: string; ownerAccountId?: string; name?: string; version?: number } } | null)?.agent;
    if (!a?.id || !a.ownerAccountId || !a.name || typeof a.version !== 'number') return null;
    return { id: a.id, owner_account_id: a.ownerAccountId, name: a.name, version: a.version, deleted: event.type === 'agents.agent.deleted' };
  }
}

function systemOnly(p: Principal): void {
  if (p.kind !== 'system') throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
}
