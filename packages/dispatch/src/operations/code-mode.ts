import { mcpClient } from '@svc/clients';
import { MessageQueue, type Registry } from '@svc/kit';
import type { mcp_code_mode, mcp_run_code } from '@svc/proto';

import type { OperationContext, ScriptTools } from '../dispatcher.js';

/**
 * Code mode, the caller's half (docs/run-code.md, "Calling tools"): runs code through the mcp
 * service's RunCodeWithTools and runs each tool call the script makes here, in the gateway (or the
 * runtime), through `tools`: as the operation's own caller, under every rule of a direct tool call.
 * The sandbox never sees a credential; it gets the results.
 *
 * When the run ends (its answer, a kill at a limit, the caller giving up), calls still in flight
 * are aborted (their signal): a read stops with nothing applied, a change already sent to its
 * service may still complete (as for a thread run's aborted tool, docs/threads.md); their results
 * go nowhere.
 */
export async function runWithTools(
  registry: Registry,
  req: mcp_run_code.RunCodeRequest,
  op: OperationContext,
  tools: ScriptTools,
  bounds: { maxToolCalls?: number; maxConcurrentToolCalls?: number },
  deadlineMs: number,
): Promise<mcp_run_code.RunCodeResponse> {
  const requests = new MessageQueue<mcp_code_mode.CodeModeClientMessage>();
  requests.push({
    start: { run: req, tools: tools.names, maxToolCalls: bounds.maxToolCalls ?? 0, maxConcurrentToolCalls: bounds.maxConcurrentToolCalls ?? 0 },
  });
  const inFlight = new AbortController();
  const abort = () => inFlight.abort();
  op.signal?.addEventListener('abort', abort, { once: true });
  try {
    const stream = mcpClient(registry).runCodeWithTools(requests, {
      principalToken: op.auth!.token,
      requestId: op.requestId,
      deadlineMs,
      signal: op.signal,
    });
    for await (const m of stream) {
      if (m.done) return m.done;
      const call = m.call;
      if (!call) continue;
      let args: unknown;
      try {
        args = JSON.parse(call.argumentsJson);
      } catch {
        args = undefined;
      }
      tools.call(call.name, args, inFlight.signal).then(
        (r) => requests.push({ result: { callId: call.callId, resultJson: JSON.stringify(r.result), isError: r.isError } }),
        () => {
          const error = { error: { code: 'internal_error', message: 'Internal error.', requestId: op.requestId } };
          requests.push({ result: { callId: call.callId, resultJson: JSON.stringify(error), isError: true } });
        },
      );
    }
    throw new Error('the code-mode stream ended without an answer');
  } finally {
    op.signal?.removeEventListener('abort', abort);
    inFlight.abort();
    requests.end();
  }
}
