/**
 * Who a grant's tokens act as (docs/oauth.md, "Scopes and the principal"): the person who
 * approved it, or, when the person chose so on the consent page, one of their agents. The choice
 * is kept in the grant itself, as an authorization detail of our own type (RFC 9396's shape:
 * `[{type: 'svc_agent', agent_id}]` in the grant's `rar`), so it lives and ends with the grant and
 * cannot be lost apart from it. Rich authorization requests are off in the server, so nothing of
 * oidc-provider reads it: the gateway does, when it verifies a token.
 */
import { agentsClient } from '@svc/clients';
import { DomainError, type PrincipalSigner, type Registry } from '@svc/kit';

export const AGENT_DETAIL = 'svc_agent';

const AGENT_ID = /^agt_[0-9a-z]{26}$/;

interface GrantLike {
  rar?: unknown;
}

/** The agent a grant's tokens act as; undefined: the person. */
export function agentOf(grant: GrantLike | undefined): string | undefined {
  if (!Array.isArray(grant?.rar)) return undefined;
  const detail = (grant.rar as Array<{ type?: unknown; agent_id?: unknown }>).find((d) => d?.type === AGENT_DETAIL);
  return typeof detail?.agent_id === 'string' && AGENT_ID.test(detail.agent_id) ? detail.agent_id : undefined;
}

/** Makes the grant's tokens act as `agentId`, or as the person (undefined). */
export function actAs(grant: GrantLike, agentId: string | undefined): void {
  if (agentId) grant.rar = [{ type: AGENT_DETAIL, agent_id: agentId }];
  else delete grant.rar;
}

/** An agent a person may choose on the consent page. */
export interface Choosable {
  id: string;
  name: string;
}

const personToken = async (signer: PrincipalSigner, userId: string) =>
  (await signer.sign({ kind: 'human', userId, accountId: userId, channel: 'api' })).token;

/** The person's own agents (of their own account, at most 100), for the consent page. */
export async function agentsOfPerson(registry: Registry, signer: PrincipalSigner, userId: string): Promise<Choosable[]> {
  const { agents } = await agentsClient(registry).listAgents({ limit: 100 }, { principalToken: await personToken(signer, userId), deadlineMs: 5000 });
  return agents.map((a) => ({ id: a.id, name: a.name }));
}

/**
 * The agent `agentId` as the person sees it (one of their own account's, live), or a refusal:
 * checked when the person chooses it and again whenever a token of the grant is verified, so a
 * deleted agent's grant acts no more.
 */
export async function agentOfPerson(registry: Registry, signer: PrincipalSigner, userId: string, agentId: string): Promise<Choosable> {
  const refused = () => new DomainError('unauthenticated', 'invalid_token', 'The agent this access was granted to is gone.');
  if (!AGENT_ID.test(agentId)) throw refused();
  try {
    const { agent } = await agentsClient(registry).getAgent({ id: agentId }, { principalToken: await personToken(signer, userId), deadlineMs: 5000 });
    if (!agent || agent.ownerAccountId !== userId) throw refused();
    return { id: agent.id, name: agent.name };
  } catch (err) {
    if (err instanceof DomainError && err.kind === 'not_found') throw refused();
    throw err;
  }
}
