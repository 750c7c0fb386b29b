import { type CallContext, DomainError, MessageQueue } from '@svc/kit';
import type { mcp_code_mode, mcp_run_code } from '@svc/proto';
import type { RunTools } from '@svc/quickjs';

/** What a run may add to a plain RunCode: tools (code mode) and its own signal (run-code.ts makes one). */
export type RunWith = (req: mcp_run_code.RunCodeRequest, ctx: CallContext, extra?: { tools?: RunTools }) => Promise<mcp_run_code.RunCodeResponse>;

type ClientMessage = mcp_code_mode.CodeModeClientMessage;
type ServerMessage = mcp_code_mode.CodeModeServerMessage;

/**
 * RunCodeWithTools (code_mode.proto, docs/run-code.md "Calling tools"): the caller's first message
 * starts a run whose script may call tools; each call the script makes goes back to the caller as
 * a `call`, whose `result` the caller sends when it has run it (as its own caller: this service
 * holds no credential and decides nothing about authority); the run's outcome is the last message.
 *
 * The bounds are the lower of the caller's and this service's (`maxCalls`, `maxConcurrent`). The
 * caller going away (its request side ending, or the call reset) aborts the run as RunCode's
 * signal does; a call still waiting for its result when the run ends is answered `call_aborted`
 * to no one (the run is over) and the caller stops it when the stream ends.
 */
export function codeModeHandler(runWith: RunWith, bounds: { maxCalls: number; maxConcurrent: number }) {
  return async function* runCodeWithTools(requests: AsyncIterable<ClientMessage>, ctx: CallContext): AsyncGenerator<ServerMessage> {
    const input = requests[Symbol.asyncIterator]();
    const first = await input.next();
    const start = first.done ? undefined : first.value.start;
    if (!start?.run) throw new DomainError('invalid_argument', 'invalid_request', 'A code-mode run begins with its start message.');
    const out = new MessageQueue<ServerMessage>();
    const waiting = new Map<number, (r: mcp_code_mode.CodeModeResult) => void>();
    const gone = new AbortController();
    ctx.signal.addEventListener('abort', () => gone.abort(), { once: true });
    // The caller's results, as they come; its side ending before the run's end means it has gone.
    let finished = false;
    void (async () => {
      try {
        for (let n = await input.next(); !n.done; n = await input.next()) if (n.value.result) waiting.get(n.value.result.callId)?.(n.value.result);
      } catch {
        // the call was reset: the signal tells the run
      }
      if (!finished) gone.abort();
    })();
    let nextId = 1;
    const tools: RunTools = {
      names: start.tools,
      maxCalls: Math.min(bounds.maxCalls, start.maxToolCalls > 0 ? start.maxToolCalls : bounds.maxCalls),
      maxConcurrent: Math.min(bounds.maxConcurrent, start.maxConcurrentToolCalls > 0 ? start.maxConcurrentToolCalls : bounds.maxConcurrent),
      call: (name, argsJson, signal) =>
        new Promise((resolve) => {
          const callId = nextId++;
          const onAbort = () => {
            if (waiting.delete(callId))
              resolve({ json: JSON.stringify({ error: { code: 'call_aborted', message: 'The run ended.' } }), isError: true });
          };
          waiting.set(callId, (r) => {
            waiting.delete(callId);
            signal.removeEventListener('abort', onAbort);
            resolve({ json: r.resultJson, isError: r.isError });
          });
          signal.addEventListener('abort', onAbort, { once: true });
          out.push({ call: { callId, name, argumentsJson: argsJson } });
        }),
    };
    const runCtx: CallContext = Object.create(ctx, { signal: { value: gone.signal } }) as CallContext;
    runWith(start.run, runCtx, { tools }).then(
      (done) => {
        finished = true;
        out.push({ done });
        out.end();
      },
      (err: unknown) => {
        finished = true;
        out.fail(err);
      },
    );
    yield* out;
  };
}
