import { ASK_PERSON, toolAllowed } from '@svc/agents';
import type { Dispatcher } from '@svc/dispatch';
import type { Principal, PrincipalSigner } from '@svc/kit';
import type { models_infer } from '@svc/proto';
import { CALL_TOOL, callTool, EVERY_TOOL_VIEW, type ToolCatalogue, type ToolResult, withAllowList } from '@svc/tools';

import type { AbortMode } from './control.js';

/**
 * Operations that change nothing a stop could leave half done, though they are not GETs: scripts
 * run in the sandbox (pure computation: its process is killed), and the checks and estimates that
 * only compute an answer.
 */
const STOPPABLE = new Set(['code.run', 'code.check', 'code.runFile', 'code.runWithData']);
/** Relays to something outside the platform: stopping the call stops the wait, not the far side. */
const ABANDONED = new Set(['hosts.call']);

/**
 * The runtime's own tool (docs/threads.md, "Questions to a person"): the agent asks the thread's
 * person and the run waits for the answer (approval-step.ts); never dispatched as an operation.
 */
const ASK_PERSON_TOOL: models_infer.ToolDefinition = {
  name: ASK_PERSON,
  description:
    'Ask the person of this thread a question and wait for the answer (their next message). Use it when you need a decision or a fact only they have.',
  inputSchemaJson: JSON.stringify({
    type: 'object',
    properties: { question: { type: 'string', description: 'The question, as the person will read it.' } },
    required: ['question'],
    additionalProperties: false,
  }),
};

export class AgentTools {
  private readonly tokens = new Map<string, { token: string; expiresAt: number }>();

  /** `catalogue`: the tools, built when first needed (building them takes most of a second of a start). */
  constructor(
    private readonly catalogueOf: () => ToolCatalogue,
    private readonly dispatcher: Dispatcher,
    private readonly signer: PrincipalSigner,
  ) {}

  private get catalogue(): ToolCatalogue {
    return this.catalogueOf();
  }

  /** Whether an agent with these tool patterns may call `name` (ask_person: every agent with the default set too). */
  allows(patterns: string[] | null, name: string): boolean {
    return toolAllowed(patterns, name) || (name === ASK_PERSON && patterns === null);
  }

  /** The definitions the model is given. */
  definitions(patterns: string[] | null): models_infer.ToolDefinition[] {
    return [
      ...this.catalogue
        .list()
        .filter((t) => this.allows(patterns, t.name))
        .map((t) => ({ name: t.name, description: t.description, inputSchemaJson: JSON.stringify(t.inputSchema) })),
      ...(this.allows(patterns, ASK_PERSON) ? [ASK_PERSON_TOOL] : []),
    ];
  }

  /**
   * What an abort does to a call of this tool (docs/threads.md, "Aborting a tool"): reads and
   * sandboxed scripts stop with nothing applied; a host call is abandoned (the platform stops
   * waiting); every other operation changes something in one transaction and is left to answer.
   * `call_tool` is its inner tool's; search_tools and unknown tools change nothing.
   */
  abortMode(name: string, args: unknown): AbortMode {
    const inner = name === CALL_TOOL && args && typeof args === 'object' ? (args as { name?: unknown }).name : name;
    const b = typeof inner === 'string' ? this.catalogue.binding(inner) : undefined;
    if (!b) return 'stop';
    if (ABANDONED.has(b.route.id)) return 'abandon';
    return b.route.method === 'get' || STOPPABLE.has(b.route.id) ? 'stop' : 'finish';
  }

  async call(
    principal: Principal,
    patterns: string[] | null,
    name: string,
    args: unknown,
    requestId: string,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    const inner = name === CALL_TOOL && args && typeof args === 'object' ? (args as { name?: unknown }).name : undefined;
    for (const n of [name, ...(typeof inner === 'string' ? [inner] : [])]) {
      if (!this.catalogue.get(n) || !this.allows(patterns, n)) {
        return {
          isError: true,
          structuredContent: {
            error: { code: 'tool_not_allowed', message: `This agent may not call ${JSON.stringify(n.slice(0, 200))}.`, requestId },
          },
        };
      }
    }
    // The agent's list binds what a script it runs may call too (code mode), as it binds the run.
    const view = withAllowList(EVERY_TOOL_VIEW, (n) => this.allows(patterns, n), 'run');
    return callTool(this.dispatcher, this.catalogue, name, args, {
      auth: { principal, token: await this.token(principal) },
      requestId,
      signal,
      view,
    });
  }

  async token(p: Principal): Promise<string> {
    const key = `${p.agentId}:${p.accountId}:${p.projectId ?? ''}`;
    const hit = this.tokens.get(key);
    if (hit && hit.expiresAt - Date.now() > 60_000) return hit.token;
    const signed = await this.signer.sign(p);
    if (this.tokens.size > 10_000) this.tokens.clear();
    this.tokens.set(key, signed);
    return signed.token;
  }
}
