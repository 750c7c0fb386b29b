/**
 * What stops a run's work from outside while it works (docs/threads.md, "Aborting a tool"): a
 * cancel, an interrupting message, a rollback, the thread deleted, or the run lost to another
 * worker. The signal comes on the run's control subject (`agents.run.<id>`, NATS core, heard by
 * whichever worker holds the run) and, should it be lost, from the lease renewal, which reads the
 * run's cancel state and whether the run is still this worker's. It aborts the model turn and the
 * tool call in progress at once, rather than at the next step boundary.
 */

export type StopReason = 'cancel' | 'interrupt' | 'rollback' | 'deleted' | 'lost';

/** What an abort does to a tool's call (AgentTools.abortMode). */
export type AbortMode =
  /** Stopped at once, with nothing applied (reads, scripts in the sandbox). */
  | 'stop'
  /** The platform stops waiting at once; what the far side had done by then stands (a host's tool). */
  | 'abandon'
  /** Left to answer (a change that commits as one transaction): the stop takes effect right after. */
  | 'finish';

/** The run is no longer this worker's to write (ended, taken over, deleted): its work stops quietly. */
export class RunEnded extends Error {}

export class RunControl {
  cancel: boolean;
  interrupt = false;
  /** Set when the run was ended from outside or taken by another worker: nothing more of it is written. */
  ended: StopReason | null = null;
  private turn?: AbortController;
  private tool?: AbortController;

  constructor(cancelRequested: boolean) {
    this.cancel = cancelRequested;
  }

  /** Why the work in progress should stop now, if it should. */
  get stopping(): StopReason | null {
    return this.ended ?? (this.cancel ? 'cancel' : this.interrupt ? 'interrupt' : null);
  }

  /** A message on the run's control subject. */
  heard(data: unknown): void {
    const kind = (data as { kind?: unknown } | null)?.kind;
    if (kind === 'cancel') this.cancel = true;
    else if (kind === 'interrupt') this.interrupt = true;
    else if (kind === 'rollback' || kind === 'deleted') this.ended ??= kind;
    else return;
    this.abortWork();
  }

  /** The lease renewal's answer: the run's cancel state, or null when the run is no longer this worker's. */
  renewed(held: { cancelRequested: boolean } | null): void {
    if (!held) {
      this.ended ??= 'lost';
      this.abortWork();
    } else if (held.cancelRequested && !this.cancel) {
      this.cancel = true;
      this.abortWork();
    }
  }

  /** A model turn's controller: aborted when the run is told to stop (at once, when it already was). */
  startTurn(): AbortController {
    this.turn = this.controller();
    return this.turn;
  }

  endTurn(): void {
    this.turn = undefined;
  }

  /** A tool call's controller (a tool whose abort mode is not `finish`). */
  startTool(): AbortController {
    this.tool = this.controller();
    return this.tool;
  }

  endTool(): void {
    this.tool = undefined;
  }

  private controller(): AbortController {
    const c = new AbortController();
    if (this.stopping) c.abort();
    return c;
  }

  private abortWork(): void {
    this.turn?.abort();
    this.tool?.abort();
  }
}

const WHY: Record<StopReason, string> = {
  cancel: 'the run was cancelled',
  interrupt: 'a new message interrupted the run',
  rollback: 'the run was rolled back by a new message',
  deleted: 'the thread was deleted',
  lost: 'the run passed to another worker',
};

/**
 * The result recorded for a call stopped by an abort (`started`: it was running; else it never
 * began): the tool error `tool_aborted`, which the model sees. `effect` says what is left of it:
 * `none` (nothing was applied) or `unknown` (a host's tool may have acted before the platform
 * stopped waiting).
 */
export function abortedResult(reason: StopReason, started: boolean, mode: AbortMode, requestId: string) {
  const effect = started && mode === 'abandon' ? 'unknown' : 'none';
  const message = started
    ? mode === 'abandon'
      ? `Aborted while it ran: ${WHY[reason]}. The platform stopped waiting for it; what it had done by then may stand.`
      : `Aborted while it ran: ${WHY[reason]}. It was stopped with nothing applied.`
    : `Not run: ${WHY[reason]} before this call began.`;
  return { error: { code: 'tool_aborted', message, requestId, details: { reason, started, effect } } };
}
