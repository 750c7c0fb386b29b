/** What a script threw, or what stopped it, as the RunError a caller reads (engine.ts runs the script). */
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';

import type { RunError, RunErrorCode, RunMode } from './protocol.js';

const MIB = 1024 * 1024;
/** Frames of a stack trace kept. */
const MAX_FRAMES = 20;
/** What a script run as a function body is wrapped in (positions are told in the caller's code). */
export const FUNCTION_PREFIX = '(async function () {';

/** What classify reads of the interpreter that ran the script (engine.ts's Interpreter). */
export interface ErrorSource {
  context: QuickJSContext;
  memory: WebAssembly.Memory;
  capBytes: number;
  describe: QuickJSHandle;
  out: { budget: number };
}

export interface Circumstances {
  timedOut: boolean;
  exceeded: boolean;
  syntax: boolean;
  serializing: boolean;
  mode: RunMode;
}

/** Turns what the script threw (or what stopped it) into a RunError with its position. */
export function classify(it: ErrorSource, error: QuickJSHandle, c: Circumstances): RunError {
  const d = describeError(it, error);
  const where = position(d, c.mode);
  const base = { ...(d.name ? { name: d.name } : {}), ...where, ...(d.stack ? { stack: cleanStack(d.stack, c.mode) } : {}) };
  const internal = d.name === 'InternalError';
  let code: RunErrorCode;
  let message: string;
  if (c.exceeded) {
    code = 'output_limit';
    message = `The console output passed the output limit of ${it.out.budget} bytes; the run was stopped.`;
  } else if (c.timedOut || (internal && d.message === 'interrupted')) {
    code = 'timeout';
    message = 'The script ran past its time limit and was stopped.';
  } else if (internal && /out of memory|string too long|invalid array length/i.test(d.message)) {
    code = 'memory_limit';
    message = `The script went past its memory limit (${d.message}).`;
  } else if (d.failed && it.memory.buffer.byteLength + MIB >= it.capBytes) {
    // Nothing could be allocated even to describe the error: the memory is used up.
    code = 'memory_limit';
    message = 'The script went past its memory limit.';
  } else if (d.failed) {
    code = 'script_error';
    message = 'The script threw a value that could not be described.';
  } else if (internal && d.message === 'stack overflow') {
    code = 'stack_overflow';
    message = 'The script recursed too deeply (stack overflow).';
  } else if (d.name === 'UnsettledPromise') {
    return { code: 'unsettled_promise', message: 'The promise the script gave back never settled (there are no timers or I/O inside the sandbox).' };
  } else if (c.syntax) {
    code = 'syntax_error';
    message = d.message;
  } else if (c.serializing) {
    code = 'result_not_serializable';
    message = `The result could not be turned into JSON: ${d.message}`;
  } else {
    code = 'script_error';
    message = d.name ? `${d.name}: ${d.message}` : d.message;
    if (/^could not load module/.test(d.message)) message += ' (nothing can be imported inside the sandbox)';
  }
  return { code, message, ...base };
}

interface Described {
  /** Describing failed (the value's getters threw or ran out of time, memory ran out). */
  failed: boolean;
  name: string;
  message: string;
  stack: string;
  line: number;
  column: number;
}

function describeError(it: ErrorSource, error: QuickJSHandle): Described {
  const { context: ctx } = it;
  const blank: Described = { failed: false, name: '', message: '', stack: '', line: -1, column: -1 };
  const r = ctx.callFunction(it.describe, ctx.undefined, error);
  error.dispose();
  if (r.error) {
    r.error.dispose();
    return { ...blank, failed: true };
  }
  const field = (i: number): string | number | undefined => {
    const h = ctx.getProp(r.value, i);
    const t = ctx.typeof(h);
    const v = t === 'string' ? ctx.getString(h) : t === 'number' ? ctx.getNumber(h) : undefined;
    h.dispose();
    return v;
  };
  const out = { ...blank };
  const [name, message, stack, line, column] = [0, 1, 2, 3, 4].map(field);
  if (typeof name === 'string') out.name = name.slice(0, 200);
  if (typeof message === 'string') out.message = message.slice(0, 4000);
  if (typeof stack === 'string') out.stack = stack;
  if (typeof line === 'number') out.line = line;
  if (typeof column === 'number') out.column = column;
  r.value.dispose();
  return out;
}

const FRAME = /script\.js:(\d+)(?::(\d+))?/;

/** The error's line and column in the caller's code: the first frame of the script's own. */
function position(d: Described, mode: RunMode): { line?: number; column?: number } {
  let line = d.line > 0 ? d.line : undefined;
  let column = d.column > 0 ? d.column : undefined;
  const m = FRAME.exec(d.stack);
  if (m && line === undefined) {
    line = Number(m[1]);
    column = m[2] ? Number(m[2]) : undefined;
  }
  if (line === undefined) return {};
  if (mode === 'function' && line === 1 && column !== undefined) column = Math.max(1, column - FUNCTION_PREFIX.length);
  return column === undefined ? { line } : { line, column };
}

/** The stack's frames, at most MAX_FRAMES of them, with positions in the caller's code. */
function cleanStack(stack: string, mode: RunMode): string {
  let frames = stack.split('\n').filter((l) => l.trim() !== '');
  if (mode === 'function') {
    frames = frames.map((l) => l.replace(/script\.js:1:(\d+)/, (_m, c: string) => `script.js:1:${Math.max(1, Number(c) - FUNCTION_PREFIX.length)}`));
  }
  if (frames.length <= MAX_FRAMES) return frames.join('\n');
  return [...frames.slice(0, MAX_FRAMES), `    ... ${frames.length - MAX_FRAMES} more frames`].join('\n');
}
