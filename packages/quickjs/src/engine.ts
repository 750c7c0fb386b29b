import fs from 'node:fs';
import { createRequire } from 'node:module';

import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  RELEASE_SYNC,
} from 'quickjs-emscripten';

import { classify, FUNCTION_PREFIX } from './engine-errors.js';
import { type RunLimits, STACK_SIZE_BYTES } from './limits.js';
import { PRELUDE } from './prelude.js';
import { LOG_LEVELS, type LogEntry, type LogLevel, type RunError, type RunMode, type RunOutcome } from './protocol.js';
import { type ToolCallOut, type ToolLimits, ToolSession } from './tool-calls.js';

/**
 * One run's interpreter, inside the child process: a QuickJS WebAssembly instance of its own (its
 * own linear memory, capped), one runtime and one context with the prelude evaluated. Each run
 * gets a fresh one, prepared before the run arrives, so nothing of one script (not even freed
 * memory) is there for the next.
 */
export interface Interpreter {
  /** The memory limit it was built for: its linear memory is capped at this plus OWN_MEMORY_MB. */
  memoryLimitMb: number;
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  memory: WebAssembly.Memory;
  capBytes: number;
  serialize: QuickJSHandle;
  describe: QuickJSHandle;
  moduleResult: QuickJSHandle;
  setBudget: QuickJSHandle;
  enableTools: QuickJSHandle;
  /** The run's tool calls, when it has tools (code mode). */
  tools?: ToolSession;
  out: Output;
}

interface Output {
  logs: LogEntry[];
  bytes: number;
  budget: number;
  truncated: boolean;
  exceeded: boolean;
}

const FILE = 'script.js';
const MIB = 1024 * 1024;
const PAGE = 64 * 1024;
/** The emscripten build's initial memory: its static data, stack and first heap (16 MiB). */
const INITIAL_PAGES = (16 * MIB) / PAGE;
/** What the interpreter's own data and stack take, beside the script's heap. */
export const OWN_MEMORY_MB = 2;
/** Room to describe an error after the script hit its memory limit. */
const DESCRIBE_MEMORY_BYTES = 4 * MIB;
/** Time to describe an error or serialize a result after the script's own time ran out. */
const EPILOGUE_MS = 200;
/** Code with a top-level import or export is a module: its syntax errors are told as a module's. */
const IMPORT_EXPORT = /^\s*(import(\s+[\w$]|\s*[{*'"])|export\s)/m;
const LEVELS = new Set<string>(LOG_LEVELS);

/** Compiles the QuickJS WebAssembly once per process; each interpreter instantiates it. */
export async function compileQuickJS(): Promise<WebAssembly.Module> {
  const require = createRequire(__filename);
  const wasm = require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm', { paths: [require.resolve('quickjs-emscripten')] });
  return WebAssembly.compile(fs.readFileSync(wasm));
}

/**
 * A fresh interpreter for runs with a memory limit of `memoryLimitMb`. The limit is held by the
 * WebAssembly memory itself: the interpreter's whole linear memory (heap, stack, static data) may
 * grow to the limit plus OWN_MEMORY_MB and no further, whatever the allocator does. (QuickJS's own
 * malloc limit is set too, but in this build it counts a few bytes per allocation rather than their
 * sizes: it stops one huge allocation, not a million small ones.)
 */
export async function prepare(compiled: WebAssembly.Module, memoryLimitMb: number): Promise<Interpreter> {
  const maximum = Math.max(INITIAL_PAGES, Math.ceil(((memoryLimitMb + OWN_MEMORY_MB) * MIB) / PAGE));
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum });
  const wasm = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmModule: compiled, wasmMemory: memory }));
  const runtime = wasm.newRuntime();
  runtime.setMaxStackSize(STACK_SIZE_BYTES);
  const context = runtime.newContext();
  const out: Output = { logs: [], bytes: 0, budget: 0, truncated: false, exceeded: false };
  const sink = context.newFunction('sink', (level, text) => {
    if (out.exceeded || context.typeof(level) !== 'string' || context.typeof(text) !== 'string') return;
    const name = context.getString(level);
    if (!LEVELS.has(name)) return;
    collect(out, name as LogLevel, context.getString(text));
  });
  // Code mode's one way out (tool-calls.ts): a tool call handed to the run's session, if it has one.
  const toolHost = context.newFunction('toolHost', (name, args, resolve, reject) => {
    const tools = it.tools;
    if (!tools || context.typeof(name) !== 'string' || context.typeof(args) !== 'string') return;
    if (context.typeof(resolve) !== 'function' || context.typeof(reject) !== 'function') return;
    tools.begin(context.getString(name), context.getString(args), resolve, reject);
  });
  const fn = context.unwrapResult(context.evalCode(PRELUDE, 'prelude.js'));
  const helpers = context.unwrapResult(context.callFunction(fn, context.undefined, sink, toolHost));
  const it: Interpreter = {
    memoryLimitMb,
    runtime,
    context,
    memory,
    capBytes: maximum * PAGE,
    serialize: context.getProp(helpers, 0),
    describe: context.getProp(helpers, 1),
    moduleResult: context.getProp(helpers, 2),
    setBudget: context.getProp(helpers, 3),
    enableTools: context.getProp(helpers, 4),
    out,
  };
  for (const h of [fn, helpers, sink, toolHost]) h.dispose();
  return it;
}

/**
 * What one console entry costs beside its text: about what its JSON takes on the wire
 * (`{"level":"debug","message":""},`), so that the limit bounds the answer, not just the texts.
 */
export const LOG_ENTRY_OVERHEAD = 32;

/** Keeps one console call's text, or as much as fits, and notes when the output limit is reached. */
function collect(out: Output, level: LogLevel, text: string): void {
  const bytes = Buffer.byteLength(text) + LOG_ENTRY_OVERHEAD;
  if (out.bytes + bytes <= out.budget) {
    out.logs.push({ level, message: text });
    out.bytes += bytes;
    return;
  }
  const room = out.budget - out.bytes - LOG_ENTRY_OVERHEAD;
  if (room > 0) {
    let cut = text.slice(0, room);
    while (Buffer.byteLength(cut) > room) cut = cut.slice(0, -1);
    out.logs.push({ level, message: cut });
    out.bytes = out.budget;
  }
  out.truncated = true;
  out.exceeded = true;
}

type Evaluated = { mode: RunMode; value?: QuickJSHandle; error?: QuickJSHandle; syntax?: boolean };

/**
 * Chooses how to run the code from what it parses as (a script, else a module, else the body of
 * an async function) and runs it. Compile errors are told from runtime errors: a script may throw
 * a SyntaxError of its own (JSON.parse) while running.
 */
function evaluate(ctx: QuickJSContext, code: string, checkOnly = false): Evaluated {
  // A check compiles only: the mode is known, nothing runs.
  const runs = (mode: RunMode, r: () => ReturnType<QuickJSContext['evalCode']>): Evaluated =>
    checkOnly ? { mode, value: ctx.undefined } : unwrap(mode, r());
  const script = ctx.evalCode(code, FILE, { type: 'global', compileOnly: true });
  if (!script.error) {
    script.value.dispose();
    return runs('script', () => ctx.evalCode(code, FILE, { type: 'global' }));
  }
  const asModule = ctx.evalCode(code, FILE, { type: 'module', compileOnly: true });
  if (!asModule.error) {
    script.error.dispose();
    asModule.value.dispose();
    return runs('module', () => ctx.evalCode(code, FILE, { type: 'module' }));
  }
  // No user code has run yet: dumping the compiler's own error object is safe.
  const moduleError = ctx.dump(asModule.error) as { name?: unknown } | undefined;
  const looksLikeModule = IMPORT_EXPORT.test(code);
  if (moduleError?.name !== 'SyntaxError') {
    // It parses as a module, but an import cannot be loaded.
    script.error.dispose();
    return { mode: 'module', error: asModule.error };
  }
  const wrapped = `${FUNCTION_PREFIX}${code}\n})`;
  const asFunction = looksLikeModule ? undefined : ctx.evalCode(wrapped, FILE, { type: 'global', compileOnly: true });
  if (asFunction && !asFunction.error) {
    script.error.dispose();
    asModule.error.dispose();
    asFunction.value.dispose();
    return runs('function', () => ctx.evalCode(`${wrapped}()`, FILE, { type: 'global' }));
  }
  asFunction?.error?.dispose();
  if (looksLikeModule) {
    script.error.dispose();
    return { mode: 'module', error: asModule.error, syntax: true };
  }
  asModule.error.dispose();
  return { mode: 'script', error: script.error, syntax: true };
}

function unwrap(mode: RunMode, r: ReturnType<QuickJSContext['evalCode']>): Evaluated {
  return r.error ? { mode, error: r.error } : { mode, value: r.value };
}

/**
 * What a run may add: `globalsJson`, a JSON object whose members become globals before the code
 * runs (the caller's inputs); `checkOnly`, compile without running (a syntax check).
 */
export interface RunExtras {
  globalsJson?: string;
  checkOnly?: boolean;
  /**
   * Code mode: the script gets `svc` and may call these tools; each call goes out through `send`,
   * and its answer comes back through the session (`it.tools.answer`).
   */
  tools?: { limits: ToolLimits; send: (call: ToolCallOut) => void };
}

/**
 * Runs one script in a prepared interpreter (used once). Never rejects. While the script awaits
 * tool calls (code mode) nothing runs inside; the wait counts against the run's time.
 */
export async function run(it: Interpreter, code: string, limits: RunLimits, extras: RunExtras = {}): Promise<RunOutcome> {
  const started = performance.now();
  const { runtime: rt, context: ctx, out } = it;
  out.budget = limits.maxOutputBytes;
  const budget = ctx.newNumber(limits.maxOutputBytes);
  ctx.callFunction(it.setBudget, ctx.undefined, budget).dispose();
  budget.dispose();
  rt.setMemoryLimit(limits.memoryLimitMb * MIB);
  let deadline = Date.now() + limits.timeoutMs;
  let timedOut = false;
  rt.setInterruptHandler(() => {
    if (out.exceeded) return true;
    if (Date.now() < deadline) return false;
    timedOut = true;
    return true;
  });
  const finish = (resultJson: string | null, mode: RunMode, error?: RunError): RunOutcome => ({
    resultJson,
    logs: out.logs,
    logsTruncated: out.truncated,
    ...(error ? { error } : {}),
    mode,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    ...(it.tools ? { toolCalls: it.tools.made } : {}),
  });
  let mode: RunMode = 'script';
  try {
    if (extras.tools && !extras.checkOnly) {
      it.tools = new ToolSession(ctx, extras.tools.limits, extras.tools.send);
      const names = ctx.unwrapResult(ctx.evalCode(JSON.stringify(extras.tools.limits.names), 'tools.js', { type: 'global' }));
      ctx.callFunction(it.enableTools, ctx.undefined, names).dispose();
      names.dispose();
    }
    if (extras.globalsJson) {
      const set = ctx.evalCode(`Object.assign(globalThis, ${extras.globalsJson});`, 'inputs.js', { type: 'global' });
      if (set.error) {
        set.error.dispose();
        return finish(null, mode, { code: 'sandbox_error', message: 'The inputs could not be set.' });
      }
      set.value.dispose();
    }
    const ev = evaluate(ctx, code, extras.checkOnly === true);
    mode = ev.mode;
    // A check that compiled: nothing ran, no result.
    if (extras.checkOnly && !ev.error) return finish(null, mode);
    let value = ev.value;
    let error = ev.error;
    if (value)
      ({ value, error } = await settle(
        it,
        value,
        () => Date.now() >= deadline || out.exceeded,
        () => deadline,
      ));
    if (value && error) {
      value.dispose();
      value = undefined;
    }
    if (value && mode === 'module') value = call(ctx, it.moduleResult, value, (e) => (error = e));
    let json: string | undefined;
    if (value && !error) {
      const serialized = primitiveOf(
        ctx,
        call(ctx, it.serialize, value, (e) => (error = e)),
      );
      if (typeof serialized === 'number') {
        return finish(null, mode, {
          code: 'output_limit',
          message: `The result is ${serialized} characters of JSON, past the output limit of ${limits.maxOutputBytes} bytes.`,
        });
      }
      json = serialized;
      if (json === undefined && !error)
        return finish(null, mode, { code: 'result_not_serializable', message: 'The result could not be turned into JSON.' });
    }
    // What follows may run script code (getters, toJSON) past the script's own time: a short grace.
    const limitHit = { timedOut, exceeded: out.exceeded };
    if (error) {
      deadline = Date.now() + EPILOGUE_MS;
      rt.setMemoryLimit(limits.memoryLimitMb * MIB + DESCRIBE_MEMORY_BYTES);
      return finish(
        null,
        mode,
        classify(it, error, { ...limitHit, syntax: ev.syntax === true, mode, serializing: json === undefined && value !== undefined }),
      );
    }
    if (limitHit.exceeded) return finish(null, mode, outputLimit(limits));
    const bytes = Buffer.byteLength(json!);
    if (out.bytes + bytes > limits.maxOutputBytes) {
      return finish(null, mode, {
        code: 'output_limit',
        message: `The result is ${bytes} bytes of JSON; with the console output it passes the output limit of ${limits.maxOutputBytes} bytes.`,
      });
    }
    return finish(json!, mode);
  } catch (err) {
    // A failure of the host side of the interpreter: WebAssembly recursing past the process's own
    // stack (native recursion that QuickJS's stack check does not see), a trap. The interpreter is
    // dropped; the process is fine.
    const e = err as Error;
    if (e instanceof RangeError && /call stack/i.test(e.message)) {
      return finish(null, mode, { code: 'stack_overflow', message: 'The script recursed too deeply (the interpreter ran out of stack).' });
    }
    return finish(null, mode, { code: 'sandbox_error', message: `The interpreter failed: ${e?.message ?? String(err)}` });
  } finally {
    // Calls still unanswered are abandoned: their promises can no longer settle (the parent stops them).
    it.tools?.dispose();
  }
}

function outputLimit(limits: RunLimits): RunError {
  return { code: 'output_limit', message: `The console output passed the output limit of ${limits.maxOutputBytes} bytes; the run was stopped.` };
}

/** Calls a helper with one argument; the argument handle is consumed. */
function call(ctx: QuickJSContext, fn: QuickJSHandle, arg: QuickJSHandle, onError: (e: QuickJSHandle) => void): QuickJSHandle | undefined {
  const r = ctx.callFunction(fn, ctx.undefined, arg);
  arg.dispose();
  if (r.error) {
    onError(r.error);
    return undefined;
  }
  return r.value;
}

function primitiveOf(ctx: QuickJSContext, h: QuickJSHandle | undefined): string | number | undefined {
  if (!h) return undefined;
  const t = ctx.typeof(h);
  const v = t === 'string' ? ctx.getString(h) : t === 'number' ? ctx.getNumber(h) : undefined;
  h.dispose();
  return v;
}

/**
 * Waits for a promise the code gave back (an async function's, a module's top-level await) by
 * running the interpreter's jobs, and runs the jobs the script left queued. There are no timers
 * and no I/O inside, so a promise still pending once no job is left never settles.
 */
async function settle(
  it: Interpreter,
  value: QuickJSHandle,
  stop: () => boolean,
  deadline: () => number,
): Promise<{ value?: QuickJSHandle; error?: QuickJSHandle }> {
  const { context: ctx, runtime: rt } = it;
  for (;;) {
    const state = ctx.getPromiseState(value);
    if (state.type === 'fulfilled' && state.notAPromise) {
      const drained = drain(it, stop);
      return drained ? { value, error: drained } : { value };
    }
    if (state.type === 'fulfilled') {
      value.dispose();
      const drained = drain(it, stop);
      return drained ? { value: state.value, error: drained } : { value: state.value };
    }
    if (state.type === 'rejected') {
      value.dispose();
      return { error: state.error };
    }
    // Code mode: nothing left to run but tool calls out; their answers (or the deadline) come next.
    if (!rt.hasPendingJob() && !stop() && it.tools && it.tools.outstanding > 0) {
      await it.tools.wait(deadline());
      continue;
    }
    if (!rt.hasPendingJob() || stop()) {
      value.dispose();
      const failed = stop() ? ctx.newError({ name: 'InternalError', message: 'interrupted' }) : undefined;
      return { error: failed ?? ctx.newError({ name: 'UnsettledPromise', message: '' }) };
    }
    const r = rt.executePendingJobs(1);
    if (r.error) {
      value.dispose();
      return { error: r.error };
    }
  }
}

/** Runs the jobs left in the queue; an error a job threw (an interrupt, say) is returned. */
function drain(it: Interpreter, stop: () => boolean): QuickJSHandle | undefined {
  while (it.runtime.hasPendingJob()) {
    if (stop()) return it.context.newError({ name: 'InternalError', message: 'interrupted' });
    const r = it.runtime.executePendingJobs(64);
    if (r.error) return r.error;
  }
  return undefined;
}
