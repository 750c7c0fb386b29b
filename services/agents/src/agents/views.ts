import type { agents } from '@svc/proto';

import type { AgentRow } from './store.js';

/** An agent row as the gRPC message. */
export function toAgent(a: AgentRow): agents.Agent {
  return {
    id: a.id,
    ownerAccountId: a.owner_account_id,
    name: a.name,
    description: a.description ?? undefined,
    model: a.model ?? undefined,
    instructions: a.instructions ?? undefined,
    projectId: a.project_id ?? undefined,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
    tools: a.tools ?? [],
    hasTools: a.tools !== null,
    maxSteps: a.max_steps ?? undefined,
    maxTokensPerRun: a.max_tokens_per_run ?? undefined,
  };
}
