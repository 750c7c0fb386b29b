import { z } from 'zod';

import { routes } from '@svc/api';
import { containsText, DomainError, parseInput, type Principal } from '@svc/kit';
import { DEFAULT_TOOLS, toolAllowed, ToolCatalogue } from '@svc/tools';

import type { ThreadOps } from '../threads/manage.js';
import type { ThreadsDomain } from '../threads/threads.js';
import { AGENT_ID_RE, type AgentsDomain, MAX_DEFAULT_AGENTS } from './agents.js';
import { AgentOpsStore } from './manage-store.js';
import type { AgentRow } from './store.js';

/**
 * An agent at work (docs/threads.md, "Agents at work"): clone and export it, its runs, usage and
 * tool calls across its threads, the tools it may call resolved against the catalogue, asking it
 * something and waiting for the answer, stopping its runs, searching agents, and the default
 * agents one by one. Visibility is AgentsDomain.get's: any other account's agent is not found.
 */

const RUN_STATUS = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
const Query = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const ToolName = z.string().regex(/^[a-z0-9_]{1,100}$/, 'must be a tool name (a-z, 0-9, _)');

const encode = (at: Date, id: string) => Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
function decode(c: string | undefined): { at: string; id: string } | undefined {
  if (!c) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(c, 'base64url').toString()) as [string, string];
    if (typeof at === 'string' && !Number.isNaN(Date.parse(at)) && typeof id === 'string' && id.length < 200) return { at, id };
  } catch {
    // below
  }
  throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
}
const pageSize = (n: number | undefined) => Math.min(Math.max(n || 50, 1), 200);

/** Whether the principal sets an agent's tools and limits: a person, through the API. */
const setsRuntime = (p: Principal) => (p.kind === 'human' || p.kind === 'system') && p.channel !== 'mcp';

/** The portable definition of an agent: the body that creates one like it. */
export function definitionOf(a: AgentRow): Record<string, unknown> {
  const d: Record<string, unknown> = { name: a.name };
  if (a.description !== null) d.description = a.description;
  if (a.model !== null) d.model = a.model;
  if (a.instructions !== null) d.instructions = a.instructions;
  if (a.tools !== null) d.tools = a.tools;
  if (a.max_steps !== null) d.maxSteps = a.max_steps;
  if (a.max_tokens_per_run !== null) d.maxTokensPerRun = a.max_tokens_per_run;
  return d;
}

export class AgentOps {
  readonly store: AgentOpsStore;
  private catalogue?: ToolCatalogue;

  constructor(
    private readonly agents: AgentsDomain,
    private readonly threads: ThreadsDomain,
    private readonly ops: ThreadOps,
  ) {
    this.store = new AgentOpsStore(agents.store.sql);
  }

  async clone(p: Principal, id: string, name?: string): Promise<{ agent: AgentRow; runtimeCopied: boolean }> {
    const src = await this.agents.get(p, id);
    const runtime = src.tools !== null || src.max_steps !== null || src.max_tokens_per_run !== null;
    const copy = runtime && setsRuntime(p);
    const agent = await this.agents.create(p, {
      name: name ?? `${src.name} (copy)`.slice(0, 100),
      description: src.description ?? undefined,
      model: src.model ?? undefined,
      instructions: src.instructions ?? undefined,
      projectId: src.project_id ?? undefined,
      ...(copy ? { tools: src.tools ?? undefined, maxSteps: src.max_steps ?? undefined, maxTokensPerRun: src.max_tokens_per_run ?? undefined } : {}),
    });
    return { agent, runtimeCopied: copy || !runtime };
  }

  async export(p: Principal, id: string): Promise<Record<string, unknown>> {
    return definitionOf(await this.agents.get(p, id));
  }

  async runs(p: Principal, id: string, input: { limit?: number; cursor?: string; status?: string }) {
    await this.agents.get(p, id);
    if (input.status !== undefined && !(RUN_STATUS as readonly string[]).includes(input.status)) {
      throw new DomainError('invalid_argument', 'invalid_request', `status: must be one of ${RUN_STATUS.join(', ')}.`);
    }
    const n = pageSize(input.limit);
    const rows = await this.store.runs(id, { status: input.status, before: decode(input.cursor), limit: n + 1 });
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { runs: page, nextCursor: rows.length > n && last ? encode(last.created_at, last.id) : undefined };
  }

  async usage(p: Principal, id: string, since?: string) {
    await this.agents.get(p, id);
    let from: Date | null = null;
    if (since !== undefined && since !== '') {
      from = new Date(since);
      if (Number.isNaN(from.getTime())) throw new DomainError('invalid_argument', 'invalid_request', 'since: must be an ISO 8601 date-time.');
    }
    return this.store.usage(id, from);
  }

  async toolCalls(p: Principal, id: string, input: { limit?: number; cursor?: string; name?: string }) {
    await this.agents.get(p, id);
    const name = input.name === undefined ? undefined : parseInput(ToolName, input.name, { where: 'name' });
    const n = pageSize(input.limit);
    const rows = await this.store.toolCalls(id, { name, before: decode(input.cursor), limit: n + 1 });
    const page = rows.slice(0, n);
    const last = page[page.length - 1];
    return { calls: page, nextCursor: rows.length > n && last ? encode(last.created_at, `${last.run_id}:${last.call_id}`) : undefined };
  }

  /** The tools the agent's runs may call: its patterns (or the default set) resolved against the catalogue. */
  async tools(p: Principal, id: string) {
    const a = await this.agents.get(p, id);
    this.catalogue ??= ToolCatalogue.fromRoutes(routes);
    const tools = this.catalogue
      .list()
      .filter((t) => toolAllowed(a.tools, t.name))
      .map((t) => ({ name: t.name, description: t.description }));
    return { patterns: a.tools ?? DEFAULT_TOOLS, usesDefault: a.tools === null, tools };
  }

  /** A new thread with the message, then waiting (at most timeoutMs) for the agent's answer. */
  async ask(p: Principal, id: string, input: { message: string; timeoutMs: number; title?: string }) {
    await this.agents.get(p, id);
    const ms = input.timeoutMs || 20_000;
    if (!Number.isInteger(ms) || ms < 100 || ms > 30_000)
      throw new DomainError('invalid_argument', 'invalid_request', 'timeoutMs: must be 100 to 30000.');
    const { thread, runId } = await this.threads.create(p, { agentId: id, title: input.title, message: input.message });
    const waited = await this.ops.wait(p, thread.id, ms);
    const run = await this.ops.run(p, thread.id, runId!);
    return { threadId: thread.id, runId: runId!, timedOut: waited.timedOut, reply: waited.lastReply, status: run.status };
  }

  /** Asks every running or queued run of the agent to stop (each at its next step boundary). */
  async cancelRuns(p: Principal, id: string): Promise<string[]> {
    await this.agents.get(p, id);
    const out: string[] = [];
    for (const r of await this.store.activeRuns(id)) {
      try {
        const c = await this.threads.cancel(p, r.thread_id);
        if (c.runId) out.push(c.runId);
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'not_found')) throw err;
      }
    }
    return out;
  }

  async search(p: Principal, query: string, limit: number): Promise<AgentRow[]> {
    const text = parseInput(Query, query ?? '', { where: 'query' });
    return this.store.search(p.accountId, p.projectId, containsText(text), Math.min(Math.max(limit || 20, 1), 100));
  }

  async addDefault(p: Principal, id: string): Promise<AgentRow[]> {
    if (!AGENT_ID_RE.test(id)) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
    const ids = (await this.agents.getDefaults(p)).map((a) => a.id);
    if (ids.includes(id)) return this.agents.getDefaults(p);
    if (ids.length >= MAX_DEFAULT_AGENTS) {
      throw new DomainError('unprocessable', 'too_many_default_agents', `An account has at most ${MAX_DEFAULT_AGENTS} default agents.`);
    }
    return this.agents.setDefaults(p, [...ids, id]);
  }

  async removeDefault(p: Principal, id: string): Promise<AgentRow[]> {
    const ids = (await this.agents.getDefaults(p)).map((a) => a.id);
    if (!ids.includes(id)) {
      await this.agents.get(p, id); // another account's agent is not found, as everywhere
      return this.agents.getDefaults(p);
    }
    return this.agents.setDefaults(
      p,
      ids.filter((x) => x !== id),
    );
  }
}
