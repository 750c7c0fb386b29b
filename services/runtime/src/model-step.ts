import type { AgentRow, ContextMessage, LiveEvents, RunRow, ThreadStore } from '@svc/agents';
import { DomainError, newId, type Principal } from '@svc/kit';
import type { models_infer } from '@svc/proto';

import { type RunControl, RunEnded } from './control.js';
import type { AgentTools } from './tools.js';

/** A call of the models service's Infer, as the runtime makes it (through the registry's client, or a test's model). */
export type Infer = (req: models_infer.InferRequest, principal: Principal, signal: AbortSignal) => AsyncIterable<models_infer.InferEvent>;

/** What a model turn needs of the run's executor. */
export interface TurnDeps {
  threads: ThreadStore;
  infer: Infer;
  tools: AgentTools;
  live: LiveEvents;
}

/** What one model turn gave: its text, the tools it called, its usage, and whether it was cut short. */
export interface Turn {
  text: string;
  toolCalls: { id: string; name: string; argumentsJson: string }[];
  usage: models_infer.Usage | undefined;
  interrupted: boolean;
}

/** Waits before asking a turn of a restarting models service again (ms): about a minute in all. */
const INFER_RETRIES = [500, 1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000, 8000];

/** One model call, its text streamed live as deltas. */
export async function modelTurn(
  d: TurnDeps,
  run: RunRow,
  step: number,
  model: string,
  agent: AgentRow,
  context: ContextMessage[],
  principal: Principal,
  state: RunControl,
): Promise<Turn> {
  const thread = await d.threads.thread(run.thread_id);
  if (!thread) throw new RunEnded();
  const afterSeq = Number(thread.last_seq);
  const abort = state.startTurn();
  const messages: models_infer.ChatMessage[] = [
    ...(agent.instructions ? [{ role: 'system', content: agent.instructions, toolCalls: [], toolCallId: '', name: '' }] : []),
    ...context.map((m) => ({ role: m.role, content: m.content, toolCalls: m.toolCalls ?? [], toolCallId: m.toolCallId ?? '', name: m.name ?? '' })),
  ];
  const turn: Turn = { text: '', toolCalls: [], usage: undefined, interrupted: false };
  for (let attempt = 0; ; attempt++) {
    try {
      await inferInto(d, turn, run, step, model, agent, messages, principal, afterSeq, abort);
      break;
    } catch (err) {
      if (abort.signal.aborted) break;
      // The models service restarting (a pod replaced, a process killed) is not the model
      // failing: the turn is asked again, a few times over about a minute, as long as
      // nothing of it has streamed yet. The charge key makes a repeated call charge once.
      const restarting = err instanceof DomainError && err.code === 'service_unavailable' && !turn.text && !turn.toolCalls.length;
      if (!restarting || attempt >= INFER_RETRIES.length || state.stopping) {
        state.endTurn();
        throw err;
      }
      await new Promise((r) => setTimeout(r, INFER_RETRIES[attempt]));
    }
  }
  state.endTurn();
  if (state.ended) throw new RunEnded();
  if (abort.signal.aborted || state.stopping) turn.interrupted = true;
  return turn;
}

/** One Infer call of a turn, its deltas, tool calls and usage collected into `turn`. */
async function inferInto(
  d: TurnDeps,
  turn: Turn,
  run: RunRow,
  step: number,
  model: string,
  agent: AgentRow,
  messages: models_infer.ChatMessage[],
  principal: Principal,
  afterSeq: number,
  abort: AbortController,
): Promise<void> {
  try {
    const stream = d.infer(
      {
        model,
        messages,
        tools: d.tools.definitions(agent.tools),
        chargeKey: `${run.id}:${step}`,
        maxOutputTokens: undefined,
        temperature: undefined,
      },
      principal,
      abort.signal,
    );
    for await (const e of stream) {
      if (e.delta) {
        turn.text += e.delta;
        void d.live.signal(run.thread_id, { kind: 'delta', runId: run.id, step, afterSeq, text: e.delta });
      } else if (e.toolCall)
        turn.toolCalls.push({ id: e.toolCall.id || newId('call'), name: e.toolCall.name, argumentsJson: e.toolCall.argumentsJson || '{}' });
      else if (e.usage) turn.usage = e.usage;
      if (abort.signal.aborted) break;
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  }
}
