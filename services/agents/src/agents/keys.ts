import type { KeysClient } from '@svc/clients';
import { DomainError, type Principal } from '@svc/kit';
import type { keys } from '@svc/proto';

import type { AgentsDomain } from './agents.js';

/**
 * An agent's API keys (/agents/:id/keys). This service decides who may manage them — the agent
 * itself, or a person of the account the agent belongs to (who sees it, as GetAgent answers) —
 * and the keys service keeps them: it is called with this service's system token and the caller
 * spelled out (account, agent, calling key and its project), so the keys service never has to
 * ask who an agent belongs to (agents -> keys, never back).
 */
export class AgentKeys {
  constructor(
    private readonly agents: AgentsDomain,
    private readonly deps: { keysClient: () => KeysClient; systemToken: () => Promise<string> },
  ) {}

  /** The caller the keys service is told about; agent_not_found unless `p` may manage the agent's keys. */
  private async caller(p: Principal, agentId: string): Promise<keys.AgentKeyCaller> {
    if (p.kind === 'agent') {
      // An agent's key manages keys of that same agent only: it cannot mint keys of another agent.
      if (agentId !== p.agentId) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
    } else if (p.kind === 'human') {
      await this.agents.get(p, agentId); // an agent of the caller's acting account (and project), or not found
    } else {
      throw new DomainError('forbidden', 'forbidden', 'This principal cannot manage API keys.');
    }
    return { accountId: p.accountId, agentId, keyId: p.keyId, projectId: p.projectId };
  }

  private async options() {
    return { principalToken: await this.deps.systemToken() };
  }

  async create(
    p: Principal,
    req: { agentId: string; name: string; projectId?: string; expiresInDays?: number; expiresInMinutes?: number },
  ): Promise<keys.CreateKeyResponse> {
    const caller = await this.caller(p, req.agentId);
    return this.deps
      .keysClient()
      .createAgentKey(
        { caller, name: req.name, projectId: req.projectId, expiresInDays: req.expiresInDays, expiresInMinutes: req.expiresInMinutes },
        await this.options(),
      );
  }

  async list(p: Principal, req: { agentId: string; projectId?: string; limit: number; cursor?: string }): Promise<keys.ListKeysResponse> {
    const caller = await this.caller(p, req.agentId);
    return this.deps.keysClient().listAgentKeys({ caller, projectId: req.projectId, limit: req.limit, cursor: req.cursor }, await this.options());
  }

  async revoke(p: Principal, req: { agentId: string; id: string }): Promise<keys.RevokeKeyResponse> {
    const caller = await this.caller(p, req.agentId);
    return this.deps.keysClient().revokeAgentKey({ caller, id: req.id }, await this.options());
  }

  async get(p: Principal, req: { agentId: string; id: string }): Promise<keys.GetKeyResponse> {
    const caller = await this.caller(p, req.agentId);
    return this.deps.keysClient().getAgentKey({ caller, id: req.id }, await this.options());
  }

  async rename(p: Principal, req: { agentId: string; id: string; name: string }): Promise<keys.GetKeyResponse> {
    const caller = await this.caller(p, req.agentId);
    return this.deps.keysClient().renameAgentKey({ caller, id: req.id, name: req.name }, await this.options());
  }
}
