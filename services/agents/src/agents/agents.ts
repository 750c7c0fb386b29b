import { z } from 'zod';

import type { AccountsClient, KeysClient } from '@svc/clients';
import { AgentDescription, AgentInstructions, AgentModel, AgentName, ProjectId } from '@svc/contract';
import {
  actorOf,
  DomainError,
  enqueueEvent,
  newId,
  type OutboxRelay,
  parseInput,
  type Principal,
  requireAuthority,
  requireHuman,
  type Sql,
} from '@svc/kit';

import { type AgentRow, AgentStore, SCHEMA } from './store.js';

/**
 * Agents are principals that act inside their owner's account. People and agents of an account
 * see and manage its agents; a project-scoped key sees the agents of its project; an agent always
 * sees itself. Moving an agent to another owner is an authority change: a person, through the API,
 * who manages both accounts. Deleting an agent, or moving it, revokes its keys at once.
 */

export const AGENT_ID_RE = /^agt_[0-9a-z]{26}$/;
const ACCOUNT_ID_RE = /^acct_[0-9a-z]{26}$/;
export const MAX_DEFAULT_AGENTS = 20;
/** How long a deleted agent can be restored. */
export const AGENT_RESTORE_DAYS = 30;

const agentNotFound = () => new DomainError('not_found', 'agent_not_found', 'Agent not found.');

const Name = AgentName;
const Description = AgentDescription;
const Model = AgentModel;
const Instructions = AgentInstructions;

/** The tools an agent's runs may call: tool names, or patterns with `*`. */
const Tools = z
  .array(z.string().regex(/^[a-z0-9_*]{1,100}$/, 'must be a tool name or a pattern with * (a-z, 0-9, _)'))
  .max(200, 'may hold at most 200 names or patterns');
const MaxSteps = z.number().int().min(1, 'must be at least 1').max(1000, 'must be at most 1000');
const MaxTokens = z.number().int().min(100, 'must be at least 100').max(100_000_000, 'must be at most 100000000');
const RUNTIME_FIELDS = ['tools', 'maxSteps', 'maxTokensPerRun'] as const;

const CreateInput = z.object({
  name: Name,
  description: Description.optional(),
  model: Model.optional(),
  instructions: Instructions.optional(),
  projectId: ProjectId.optional(),
  tools: Tools.optional(),
  maxSteps: MaxSteps.optional(),
  maxTokensPerRun: MaxTokens.optional(),
});
const UpdateInput = z.object({
  name: Name.optional(),
  description: Description.optional(),
  model: Model.optional(),
  instructions: Instructions.optional(),
  ownerAccountId: z.string().regex(ACCOUNT_ID_RE, 'must be an account id (acct_…)').optional(),
  tools: Tools.optional(),
  maxSteps: MaxSteps.optional(),
  maxTokensPerRun: MaxTokens.optional(),
  clearFields: z
    .array(
      z.enum(['description', 'model', 'instructions', 'tools', 'maxSteps', 'maxTokensPerRun'], {
        error: 'only description, model, instructions, tools, maxSteps and maxTokensPerRun can be cleared',
      }),
    )
    .max(6),
});

/**
 * What an agent's runs may do (its tools) and spend (steps, tokens) is set by a person through the
 * API: an agent key, or the MCP channel, cannot widen an agent's reach.
 */
function requireHumanForRuntime(p: Principal, body: Record<string, unknown>, cleared: readonly string[] = []): void {
  if (RUNTIME_FIELDS.some((f) => body[f] !== undefined || cleared.includes(f))) requireAuthority(p, 'An agent’s tools and limits are set');
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  return parseInput(schema, value);
}

/** What events say about an agent (instructions stay out of the event stream); `version` orders its states. */
export function eventView(a: AgentRow) {
  return { id: a.id, name: a.name, ownerAccountId: a.owner_account_id, projectId: a.project_id, model: a.model, version: a.version };
}

/** An agent as the accounts service records it (SyncAgents). */
export interface AgentRecord {
  id: string;
  ownerAccountId: string;
  name: string;
  version: number;
  deleted: boolean;
}

export const recordOf = (a: Pick<AgentRow, 'id' | 'owner_account_id' | 'name' | 'version' | 'deleted_at'>): AgentRecord => ({
  id: a.id,
  ownerAccountId: a.owner_account_id,
  name: a.name,
  version: a.version,
  deleted: a.deleted_at !== null,
});

/**
 * The accounts service's records of agents (accounts reads an agent's existence, owner and name
 * there, never calling this service: agents -> accounts is the only edge between the two).
 */
export interface AgentRecords {
  /** Writes the records (AccountsService.SyncAgents); a record no newer than the one held changes nothing. */
  sync(records: AgentRecord[]): Promise<void>;
  /** Drops the record of an agent whose creation failed (AccountsService.ForgetAgent). */
  forget(id: string): Promise<void>;
}

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string | undefined): string | undefined {
  if (!c) return undefined;
  const id = Buffer.from(c, 'base64url').toString();
  if (!AGENT_ID_RE.test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}

export interface AgentsDeps {
  sql: Sql;
  outbox: () => OutboxRelay | undefined;
  accountsClient: () => AccountsClient;
  keysClient: () => KeysClient;
  /**
   * Where the accounts service's records of agents are written: in every create, change and
   * delete. The service always passes it (index.ts); unit tests that fake no accounts service
   * leave it out.
   */
  records?: AgentRecords;
  systemToken: () => Promise<string>;
  log: { warn(obj: unknown, msg: string): void; error(obj: unknown, msg: string): void };
}

export class AgentsDomain {
  readonly store: AgentStore;

  constructor(private readonly deps: AgentsDeps) {
    this.store = new AgentStore(deps.sql);
  }

  private kick(): void {
    this.deps.outbox()?.kick();
  }

  /** Who may see an agent: its account's principals (its project's, for a scoped key), itself, the platform. */
  private sees(p: Principal, a: AgentRow): boolean {
    if (p.kind === 'system') return true;
    if (p.kind === 'agent' && p.agentId === a.id) return true;
    if (a.owner_account_id !== p.accountId) return false;
    return !p.projectId || a.project_id === p.projectId;
  }

  private async visible(p: Principal, id: string): Promise<AgentRow> {
    if (!AGENT_ID_RE.test(id)) throw agentNotFound();
    const a = await this.store.byId(id);
    if (!a || !this.sees(p, a)) throw agentNotFound();
    return a;
  }

  private usable(p: Principal): void {
    if (p.kind !== 'human' && p.kind !== 'agent' && p.kind !== 'system') {
      throw new DomainError('forbidden', 'principal_not_allowed', 'This principal cannot manage agents.');
    }
  }

  async create(
    p: Principal,
    input: {
      name: string;
      description?: string;
      model?: string;
      instructions?: string;
      projectId?: string;
      tools?: string[];
      maxSteps?: number;
      maxTokensPerRun?: number;
    },
  ): Promise<AgentRow> {
    this.usable(p);
    const body = parse(CreateInput, input);
    requireHumanForRuntime(p, body);
    if (p.projectId && body.projectId && body.projectId !== p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
    }
    const actor = actorOf(p);
    const id = newId('agt');
    // Recorded in the accounts service first, so that a grant to the agent right after this answer
    // finds it; when the agent cannot be written, the record goes again (as an account's first key
    // does when its account cannot be).
    await this.deps.records?.sync([{ id, ownerAccountId: p.accountId, name: body.name, version: 1, deleted: false }]);
    try {
      const agent = await this.deps.sql.tx(async (q) => {
        const a = await this.store.insert(q, {
          id,
          owner_account_id: p.accountId,
          project_id: p.projectId ?? body.projectId ?? null,
          name: body.name,
          description: body.description ?? null,
          model: body.model ?? null,
          instructions: body.instructions ?? null,
          tools: body.tools ?? null,
          max_steps: body.maxSteps ?? null,
          max_tokens_per_run: body.maxTokensPerRun ?? null,
          created_by: actor,
        });
        await enqueueEvent(q, SCHEMA, { subject: 'agents.agent.created', accountId: a.owner_account_id, data: { agent: eventView(a), actor } });
        return a;
      });
      this.kick();
      return agent;
    } catch (err) {
      await this.deps.records
        ?.forget(id)
        .catch((e) => this.deps.log.error({ err: e, agentId: id }, 'could not drop the record of an agent not created'));
      throw err;
    }
  }

  async list(p: Principal, input: { limit?: number; cursor?: string; projectId?: string }): Promise<{ rows: AgentRow[]; nextCursor?: string }> {
    this.usable(p);
    if (p.projectId && input.projectId && input.projectId !== p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
    }
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    const rows = await this.store.list({
      ownerAccountId: p.accountId,
      projectId: p.projectId ?? input.projectId,
      before: decodeCursor(input.cursor),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined };
  }

  async get(p: Principal, id: string): Promise<AgentRow> {
    return this.visible(p, id);
  }

  /** Revokes every key of the agent (all accounts it acted in). */
  private async revokeKeys(agentId: string): Promise<number> {
    const res = await this.deps
      .keysClient()
      .revokeOwnerKeys({ ownerKind: 'agent', ownerId: agentId }, { principalToken: await this.deps.systemToken() });
    return res.revoked;
  }

  /** The caller's role in an account, through the accounts service; null when not a member. */
  private async roleIn(p: Principal, accountId: string): Promise<string | null> {
    if (accountId === p.accountId && p.role) return p.role;
    try {
      const res = await this.deps
        .accountsClient()
        .resolveActingAccount({ userId: p.userId!, accountId }, { principalToken: await this.deps.systemToken() });
      return res.role;
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found') return null;
      throw err;
    }
  }

  async update(
    p: Principal,
    id: string,
    input: {
      name?: string;
      description?: string;
      model?: string;
      instructions?: string;
      ownerAccountId?: string;
      tools?: string[];
      maxSteps?: number;
      maxTokensPerRun?: number;
      clearFields?: string[];
    },
  ): Promise<AgentRow> {
    this.usable(p);
    const body = parse(UpdateInput, { ...input, clearFields: input.clearFields ?? [] });
    requireHumanForRuntime(p, body, body.clearFields);
    for (const f of body.clearFields) {
      if (body[f] !== undefined) throw new DomainError('invalid_argument', 'invalid_request', `${f}: cannot be both set and cleared`);
    }
    const current = await this.visible(p, id);
    const moving = body.ownerAccountId !== undefined && body.ownerAccountId !== current.owner_account_id;
    if (moving) await this.checkMove(p, current, body.ownerAccountId!);
    const actor = actorOf(p);
    if (moving) await this.revokeKeys(id); // before: no key acts for the old owner once the move is visible
    const out = await this.deps.sql.tx(async (q) => {
      const a = await this.store.byId(id, q, true);
      if (!a || !this.sees(p, a)) throw agentNotFound();
      const next = {
        name: body.name ?? a.name,
        description: body.clearFields.includes('description') ? null : (body.description ?? a.description),
        model: body.clearFields.includes('model') ? null : (body.model ?? a.model),
        instructions: body.clearFields.includes('instructions') ? null : (body.instructions ?? a.instructions),
        owner_account_id: moving ? body.ownerAccountId! : a.owner_account_id,
        tools: body.clearFields.includes('tools') ? null : (body.tools ?? a.tools),
        max_steps: body.clearFields.includes('maxSteps') ? null : (body.maxSteps ?? a.max_steps),
        max_tokens_per_run: body.clearFields.includes('maxTokensPerRun') ? null : (body.maxTokensPerRun ?? a.max_tokens_per_run),
      };
      const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
      const changed = (Object.keys(next) as Array<keyof typeof next>).filter((k) => !same(next[k], a[k]));
      if (!changed.length) return { agent: a, changed };
      const updated = await this.store.update(q, id, next);
      if (moving) {
        await this.store.dropFromDefaults(q, id);
        await enqueueEvent(q, SCHEMA, {
          subject: 'agents.agent.owner_changed',
          accountId: a.owner_account_id,
          data: { agent: eventView(updated), actor, fromAccountId: a.owner_account_id, toAccountId: updated.owner_account_id },
        });
      } else {
        await enqueueEvent(q, SCHEMA, {
          subject: 'agents.agent.updated',
          accountId: updated.owner_account_id,
          data: { agent: eventView(updated), actor, changed },
        });
      }
      return { agent: updated, changed };
    });
    if (moving) {
      // And after: a key made for the old owner while the move was in flight goes too.
      await this.revokeKeys(id).catch((err) => this.deps.log.error({ err, agentId: id }, 'revoking keys after an owner change failed'));
    }
    if (out.changed.length) {
      this.kick();
      await this.record(out.agent);
    }
    return out.agent;
  }

  /** A new owner: a person, through the API, owner or admin of both the current and the new account. */
  private async checkMove(p: Principal, a: AgentRow, to: string): Promise<void> {
    requireHuman(p);
    if (p.kind !== 'human' || p.channel === 'mcp') {
      throw new DomainError('forbidden', 'human_principal_required', 'Changing an agent’s owner is made by a person through the API.');
    }
    if (p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}; moving an agent needs an unscoped key.`);
    }
    const manages = (role: string | null) => role === 'owner' || role === 'admin';
    if (!manages(await this.roleIn(p, a.owner_account_id))) {
      throw new DomainError('forbidden', 'insufficient_role', 'Moving an agent needs the owner or admin role in its account.');
    }
    const target = await this.roleIn(p, to);
    if (!target) throw new DomainError('not_found', 'account_not_found', 'Account not found.');
    if (!manages(target))
      throw new DomainError('forbidden', 'insufficient_role', 'Moving an agent needs the owner or admin role in the new account.');
  }

  /** Deletes the agent; its keys are revoked before the delete is visible, and again by the event consumer. */
  async remove(p: Principal, id: string): Promise<number> {
    this.usable(p);
    await this.visible(p, id);
    const revoked = await this.revokeKeys(id);
    const actor = actorOf(p);
    const deleted = await this.deps.sql.tx(async (q) => {
      const a = await this.store.byId(id, q, true);
      if (!a || !this.sees(p, a)) throw agentNotFound();
      const d = (await this.store.markDeleted(q, id))!;
      await this.store.dropFromDefaults(q, id);
      await enqueueEvent(q, SCHEMA, {
        subject: 'agents.agent.deleted',
        accountId: d.owner_account_id,
        data: { agent: eventView(d), actor, revokedKeys: revoked },
      });
      return d;
    });
    this.kick();
    await this.record(deleted);
    return revoked;
  }

  /**
   * Writes a committed change to the accounts service's record. A failure is logged, not
   * answered: the change stands, and its event writes the record again when accounts consumes it.
   */
  private async record(a: AgentRow): Promise<void> {
    await this.deps.records
      ?.sync([recordOf(a)])
      .catch((err) => this.deps.log.warn({ err, agentId: a.id }, 'could not record an agent change in accounts; its event will'));
  }

  /** Writes every agent's record (deleted ones too) to the accounts service: at start, for agents older than the records. */
  async recordAll(pageSize = 500): Promise<number> {
    let after: string | null = null;
    let n = 0;
    for (;;) {
      const page = await this.store.page(after, pageSize);
      if (!page.length) return n;
      await this.deps.records?.sync(page.map(recordOf));
      n += page.length;
      after = page[page.length - 1]!.id;
    }
  }

  /** Keys of a deleted agent never come back: the consumer of agents.agent.deleted revokes again. */
  async onDeleted(agentId: string): Promise<void> {
    if (AGENT_ID_RE.test(agentId)) await this.revokeKeys(agentId);
  }

  async getDefaults(p: Principal): Promise<AgentRow[]> {
    this.usable(p);
    const rows = await this.store.defaults(p.accountId);
    return rows.filter((a) => this.sees(p, a));
  }

  /** Replaces the account's default agents (ordered, each an agent of the account). */
  async setDefaults(p: Principal, agentIds: string[]): Promise<AgentRow[]> {
    this.usable(p);
    if (p.projectId)
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}; default agents are account-wide.`);
    if (agentIds.length > MAX_DEFAULT_AGENTS) {
      throw new DomainError('invalid_argument', 'invalid_request', `agentIds: at most ${MAX_DEFAULT_AGENTS} default agents`);
    }
    if (new Set(agentIds).size !== agentIds.length) throw new DomainError('invalid_argument', 'invalid_request', 'agentIds: must not repeat an id');
    for (const id of agentIds)
      if (!AGENT_ID_RE.test(id)) throw new DomainError('invalid_argument', 'invalid_request', 'agentIds: must be agent ids (agt_…)');
    const actor = actorOf(p);
    await this.deps.sql.tx(async (q) => {
      for (const id of agentIds) {
        const a = await this.store.byId(id, q);
        if (!a || a.owner_account_id !== p.accountId) throw agentNotFound();
      }
      await this.store.setDefaults(q, p.accountId, agentIds);
      await enqueueEvent(q, SCHEMA, { subject: 'agents.default_agents.updated', accountId: p.accountId, data: { agentIds, actor } });
    });
    this.kick();
    return this.store.defaults(p.accountId);
  }

  /** Agents of the acting account deleted in the last RESTORE_DAYS days, most recently deleted first. */
  async listDeleted(p: Principal, input: { limit?: number; cursor?: string }): Promise<{ rows: AgentRow[]; nextCursor?: string }> {
    this.usable(p);
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    let before: { at: string; id: string } | undefined;
    if (input.cursor) {
      try {
        const [at, cid] = JSON.parse(Buffer.from(input.cursor, 'base64url').toString()) as [string, string];
        if (typeof at !== 'string' || Number.isNaN(Date.parse(at)) || !AGENT_ID_RE.test(cid)) throw new Error('bad');
        before = { at, id: cid };
      } catch {
        throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
      }
    }
    const rows = await this.store.listDeleted({
      ownerAccountId: p.accountId,
      projectId: p.projectId,
      since: new Date(Date.now() - AGENT_RESTORE_DAYS * 86_400_000),
      before,
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const nextCursor =
      rows.length > limit && last ? Buffer.from(JSON.stringify([last.deleted_at!.toISOString(), last.id])).toString('base64url') : undefined;
    return { rows: page, nextCursor };
  }

  /** Undoes the deletion of an agent deleted in the last RESTORE_DAYS days (its keys stay revoked); a live agent: no change. */
  async restore(p: Principal, id: string): Promise<AgentRow> {
    this.usable(p);
    if (!AGENT_ID_RE.test(id)) throw agentNotFound();
    const live = await this.store.byId(id);
    if (live && this.sees(p, live)) return live;
    const gone = await this.store.deletedById(id);
    if (!gone || !this.sees(p, gone) || gone.deleted_at!.getTime() < Date.now() - AGENT_RESTORE_DAYS * 86_400_000) throw agentNotFound();
    const actor = actorOf(p);
    const restored = await this.deps.sql.tx(async (q) => {
      const a = await this.store.restore(q, id);
      if (!a) return null;
      await enqueueEvent(q, SCHEMA, { subject: 'agents.agent.restored', accountId: a.owner_account_id, data: { agent: eventView(a), actor } });
      return a;
    });
    if (!restored) return this.get(p, id);
    this.kick();
    await this.record(restored);
    return restored;
  }
}
