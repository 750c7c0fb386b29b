import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';

/**
 * Code mode inside the child (docs/run-code.md, "Calling tools"): a script's `svc.call(name, args)`
 * becomes a message to the parent, and the parent's answer settles the promise the script awaits.
 * The sandbox holds no credential: what a call may do is decided outside, by whoever answers it.
 *
 * Calls past `maxConcurrent` wait here, in order, until one in flight is answered; a call past
 * `maxCalls` is refused at once (the error `tool_call_limit`, which the script may catch). The
 * parent holds the same two bounds again, so a script that escaped the interpreter gains nothing.
 */
export interface ToolLimits {
  /** Tool names the prelude makes helpers for (svc.tools.<name>). */
  names: string[];
  maxCalls: number;
  maxConcurrent: number;
}

/** A call the child sends to the parent. */
export interface ToolCallOut {
  callId: number;
  name: string;
  argsJson: string;
}

/** The parent's answer: the tool's result as JSON, or (isError) the contract's error body as JSON. */
export interface ToolAnswer {
  callId: number;
  json: string;
  isError: boolean;
}

interface Waiting {
  resolve: QuickJSHandle;
  reject: QuickJSHandle;
}

/** Most characters of one call's arguments (JSON). */
export const MAX_TOOL_ARGS_CHARS = 4 * 1024 * 1024;

/** One run's tool calls. */
export class ToolSession {
  /** Calls made (sent or waiting to be sent, not those refused for the count). */
  made = 0;
  private nextId = 1;
  private readonly inFlight = new Map<number, Waiting>();
  private readonly queued: Array<{ call: ToolCallOut; waiting: Waiting }> = [];
  private readonly answers: ToolAnswer[] = [];
  private wake?: () => void;

  constructor(
    private readonly ctx: QuickJSContext,
    readonly limits: ToolLimits,
    private readonly send: (call: ToolCallOut) => void,
  ) {}

  /** Calls sent and not yet answered, and calls waiting for a slot. */
  get outstanding(): number {
    return this.inFlight.size + this.queued.length;
  }

  /** The script called a tool (the host function): `resolve` and `reject` are its promise's. */
  begin(name: string, argsJson: string, resolve: QuickJSHandle, reject: QuickJSHandle): void {
    const waiting = { resolve: resolve.dup(), reject: reject.dup() };
    if (this.made >= this.limits.maxCalls) {
      return this.refuse(waiting, errorJson('tool_call_limit', `A script may make at most ${this.limits.maxCalls} tool calls.`));
    }
    if (argsJson.length > MAX_TOOL_ARGS_CHARS) {
      return this.refuse(waiting, errorJson('invalid_request', `A tool call's arguments may be at most ${MAX_TOOL_ARGS_CHARS} characters of JSON.`));
    }
    this.made++;
    const call = { callId: this.nextId++, name, argsJson };
    if (this.inFlight.size >= this.limits.maxConcurrent) this.queued.push({ call, waiting });
    else this.dispatch(call, waiting);
  }

  /** The parent answered (the child's message handler). */
  answer(a: ToolAnswer): void {
    this.answers.push(a);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /**
   * Waits until an answer arrives or `until` (a Date.now() time) passes, then settles the answered
   * calls' promises and sends waiting calls into the freed slots. Resolves false when nothing came.
   */
  async wait(until: number): Promise<boolean> {
    if (!this.answers.length) {
      const ms = until - Date.now();
      if (ms <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    if (!this.answers.length) return false;
    for (const a of this.answers.splice(0)) {
      const waiting = this.inFlight.get(a.callId);
      if (!waiting) continue;
      this.inFlight.delete(a.callId);
      this.settle(waiting, a.json, a.isError);
    }
    while (this.queued.length && this.inFlight.size < this.limits.maxConcurrent) {
      const next = this.queued.shift()!;
      this.dispatch(next.call, next.waiting);
    }
    return true;
  }

  /** Drops what is left (the run ended): promises still waiting never settle. */
  dispose(): void {
    for (const w of [...this.inFlight.values(), ...this.queued.map((q) => q.waiting)]) {
      w.resolve.dispose();
      w.reject.dispose();
    }
    this.inFlight.clear();
    this.queued.length = 0;
  }

  /**
   * A call refused here is answered as the parent's answers are, from the engine's loop: settling
   * its promise from inside the host function (the interpreter re-entered while it runs the call)
   * broke the interpreter's memory ("memory access out of bounds") on a script that kept calling.
   */
  private refuse(waiting: Waiting, json: string): void {
    const callId = this.nextId++;
    this.inFlight.set(callId, waiting);
    this.answers.push({ callId, json, isError: true });
  }

  private dispatch(call: ToolCallOut, waiting: Waiting): void {
    this.inFlight.set(call.callId, waiting);
    this.send(call);
  }

  /** Settles a call's promise with the answer's text (the prelude parses it). */
  private settle(waiting: Waiting, json: string, isError: boolean): void {
    const text = this.ctx.newString(json);
    const r = this.ctx.callFunction(isError ? waiting.reject : waiting.resolve, this.ctx.undefined, text);
    text.dispose();
    if (r.error) r.error.dispose();
    else r.value.dispose();
    waiting.resolve.dispose();
    waiting.reject.dispose();
  }
}

const errorJson = (code: string, message: string) => JSON.stringify({ error: { code, message } });
