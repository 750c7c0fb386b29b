/**
 * The sandbox's child process: runs one script at a time in a fresh QuickJS interpreter and answers
 * over the IPC channel. It holds no secret (the parent gives it an empty environment) and serves
 * nothing; the parent kills it with SIGKILL when a script runs past its time or memory, and it
 * exits when the parent goes away.
 */
import { compileQuickJS, type Interpreter, prepare, run } from './engine.js';
import type { ChildMessage, ParentMessage } from './protocol.js';
import type { ToolCallOut } from './tool-calls.js';

/** The memory limit most runs have (the default): the interpreter kept ready is built for it. */
const defaultMemoryMb = Number(process.argv[2]);
if (!Number.isInteger(defaultMemoryMb) || defaultMemoryMb < 1) process.exit(64);

const send = (m: ChildMessage) => {
  if (process.connected) process.send!(m);
};

process.on('disconnect', () => process.exit(0));
process.on('uncaughtException', () => process.exit(70));
process.on('unhandledRejection', () => process.exit(70));

async function main(): Promise<void> {
  const compiled = await compileQuickJS();
  // A first run warms the code paths up, so that the first caller's run is as fast as the rest.
  await run(await prepare(compiled, 16), 'console.log(JSON.stringify([1]))', { timeoutMs: 1000, memoryLimitMb: 16, maxOutputBytes: 1024 });
  let ready: Promise<Interpreter> = prepare(compiled, defaultMemoryMb);
  await ready;
  // One run at a time, each in an interpreter of its own (the parent sends one at a time anyway).
  let chain = Promise.resolve();
  // The interpreter of the run in progress: the parent's answers to its tool calls go to it.
  let current: { id: number; it: Interpreter } | undefined;
  process.on('message', (msg: ParentMessage) => {
    if (msg?.type === 'answer') {
      if (current?.id === msg.id) current.it.tools?.answer({ callId: msg.callId, json: msg.json, isError: msg.isError });
      return;
    }
    if (msg?.type !== 'run') return;
    chain = chain.then(async () => {
      const wanted = msg.limits.memoryLimitMb;
      // The ready interpreter serves a run with the default limit; another limit gets its own.
      const usesReady = wanted === defaultMemoryMb;
      const it = await (usesReady ? ready : prepare(compiled, wanted)).catch(() => process.exit(71));
      current = { id: msg.id, it };
      const tools = msg.tools && { limits: msg.tools, send: (c: ToolCallOut) => send({ type: 'call', id: msg.id, ...c }) };
      const outcome = await run(it, msg.code, msg.limits, { globalsJson: msg.globalsJson, checkOnly: msg.checkOnly, tools });
      current = undefined;
      send({ type: 'done', id: msg.id, outcome, rss: process.memoryUsage.rss() });
      // The interpreter is dropped (its memory goes with it) and the next one prepared now, while
      // the parent has nothing for this process.
      if (usesReady) ready = prepare(compiled, defaultMemoryMb);
      await ready.then(() => send({ type: 'ready', rss: process.memoryUsage.rss() }));
    });
  });
  send({ type: 'ready', rss: process.memoryUsage.rss() });
}

main().catch(() => process.exit(72));
