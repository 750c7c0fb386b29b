/**
 * Code mode in the gateway (docs/run-code.md, "Calling tools"): what a script's tool calls may
 * reach, decided here, where the caller's authority is. An agent's key is bound by its agent's
 * tool list (as on /mcp and in its runs), and each call a script makes takes a rate-limit token of
 * its operation's class (the dispatcher meters it), as the same call made directly would.
 */
import { createHash } from 'node:crypto';

import { routes } from '@svc/api';
import type { Dispatcher, Invocation, ScriptTools } from '@svc/dispatch';
import type { Principal } from '@svc/kit';
import { EVERY_TOOL_VIEW, scriptTools, toolAllowed, ToolCatalogue, type ToolView, withAllowList } from '@svc/tools';

/**
 * The view narrowed to an agent's tool list when the caller is an agent (one of its keys): only the
 * tools its `tools` names (or, naming none, the agent default set), read on every call so that a
 * change to the list holds from the next request. A person's key is not narrowed.
 */
export async function agentBoundView(
  dispatcher: Dispatcher,
  view: ToolView,
  auth: { principal: Principal; token: string },
  requestId: string,
): Promise<ToolView> {
  const agentId = auth.principal.agentId;
  if (auth.principal.kind !== 'agent' || !agentId) return view;
  // The front's own lookup for the request it serves: no rate-limit token of its own.
  const answer = await dispatcher.invoke('agents.get', { params: { id: agentId } }, { requestId, auth, metered: true });
  const agent = answer.kind === 'json' ? (answer.body as { tools?: string[] | null }) : undefined;
  const patterns = agent?.tools ?? null;
  const listKey = createHash('sha256').update(JSON.stringify(patterns)).digest('base64url').slice(0, 16);
  return withAllowList(view, (name) => toolAllowed(patterns, name), listKey);
}

/**
 * The tools of scripts run through the HTTP API (`POST /code/run` and the drive's code
 * operations): the dispatcher's `scriptTools`. The catalogue is made on the first such run.
 */
export function apiScriptTools(dispatcher: () => Dispatcher): (inv: Invocation) => Promise<ScriptTools | undefined> {
  let catalogue: ToolCatalogue | undefined;
  return async (inv) => {
    if (!inv.auth) return undefined;
    catalogue ??= ToolCatalogue.fromRoutes(routes);
    const view = await agentBoundView(dispatcher(), EVERY_TOOL_VIEW, inv.auth, inv.requestId);
    return scriptTools(dispatcher(), catalogue, {
      auth: inv.auth,
      requestId: inv.requestId,
      view,
    });
  };
}
