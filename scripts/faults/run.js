#!/usr/bin/env node
'use strict';
// Fault injection under load (docs/reliability.md#faults): every service its own process on
// backends of the harness's own (PostgreSQL, Redis, NATS with JetStream, s3rver; loopback only).
// A mixed workload runs while one fault at a time is injected and healed; for each fault the
// harness reports the answers by status, the slowest, answers without the error body, hangs and
// the time to recover. At the end every acknowledged write is read back, the outboxes must be
// drained and the event stream must hold each event exactly once.
//
//   npm run build && node scripts/faults/run.js [--faults kill:keys,pg-restart,...] [--seconds 16] [--down 30] [--clients 8] [--json out.json]
//
// Faults: kill:<service> (SIGKILL, restarted 3 s later) for every service, slow:<service> (SIGSTOP
// for 8 s, past the gRPC deadline), pg-restart, nats-down, redis-down (down for --down seconds).
const fs = require('node:fs');

const { startBackends } = require('./backends.js');
const { startPlatform } = require('./platform.js');
const { uploadAcrossFreeze } = require('./probe.js');
const { verify } = require('./verify.js');
const { runLoad, send } = require('./workload.js');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const DEADLINE_MS = 3000;
const TIMEOUT_MS = DEADLINE_MS + 12_000; // a client's patience: past it, an answer is a hang
const SECONDS = Number(arg('seconds', '16'));
const DOWN = Number(arg('down', '30'));
const CLIENTS = Number(arg('clients', '8'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function faultList(names) {
  const all = [
    ...names.filter((n) => n !== 'gateway').map((n) => `kill:${n}`),
    'kill:gateway',
    'slow:drive',
    'slow:keys',
    'pg-restart',
    'nats-down',
    'redis-down',
  ];
  const chosen = arg('faults');
  return chosen ? chosen.split(',') : all;
}

/** A request answered by the service a `kill:` fault stops (sent while it is down). */
const DOWN_PROBES = {
  'kill:keys': '/api/api-keys?limit=1',
  'kill:agents': '/agents?limit=1',
  'kill:drive': '/drive?limit=1',
  'kill:profiles': '/profiles?limit=1',
};

/** What a fault does and undoes. `heal` resolves when the part is back (not when the platform has recovered). */
function faultOf(spec, platform, backends) {
  const [kind, target] = spec.split(':');
  switch (kind) {
    case 'kill':
      return {
        inject: () => platform.kill(target),
        heal: async () => {
          await sleep(3000);
          platform.start(target);
        },
      };
    case 'slow':
      return {
        inject: () => platform.freeze(target),
        heal: async () => {
          await sleep(8000);
          platform.thaw(target);
        },
      };
    case 'pg-restart':
      return { inject: () => backends.pg.restart(), heal: async () => {} };
    case 'nats-down':
      return { inject: () => backends.nats.down(), heal: async () => (await sleep(DOWN * 1000), backends.nats.up()) };
    case 'redis-down':
      return { inject: () => backends.redis.down(), heal: async () => (await sleep(DOWN * 1000), backends.redis.up()) };
    default:
      throw new Error(`unknown fault ${spec}`);
  }
}

/**
 * Answers the mix counts as normal: an order refused for its balance or position (409, 422), and
 * the keys service's own limit on key creation per account and minute (429 with Retry-After).
 */
const NORMAL = new Set([409, 422, 429]);
const isError = (r) => r.status <= 0 || (r.status >= 400 && !NORMAL.has(r.status));

function summarize(spec, records, injectAt, healedAt, endAt) {
  const during = records.filter((r) => r.at >= injectAt);
  const byStatus = {};
  const codes = {};
  // Each error answer by operation ("upload 503 service_unavailable"): which part of the mix failed, and how.
  const errorsByOp = {};
  for (const r of during) {
    const k = r.status === 0 ? 'no answer' : r.status === -1 ? 'hang' : String(r.status);
    byStatus[k] = (byStatus[k] ?? 0) + 1;
    const code = r.json?.error?.code;
    if (r.status >= 400 && code) codes[`${r.status} ${code}`] = (codes[`${r.status} ${code}`] ?? 0) + 1;
    if (isError(r)) {
      const what = `${r.op} ${k}${code ? ` ${code}` : ''}`;
      errorsByOp[what] = (errorsByOp[what] ?? 0) + 1;
    }
  }
  const errors = during.filter(isError);
  const lastError = errors.length ? Math.max(...errors.map((r) => r.at)) : undefined;
  // Recovered: from the moment the part was back to the last error, provided the rest of the
  // phase (at least 2 s) answered without one.
  const recoveredMs = lastError === undefined ? 0 : lastError < endAt - 2000 ? Math.max(0, lastError - healedAt) : null;
  // The last error is recorded when its answer came: a request sent before the heal may answer after it.
  return {
    fault: spec,
    requests: during.length,
    ok: during.filter((r) => !isError(r)).length,
    byStatus,
    codes,
    errorsByOp,
    withoutErrorBody: during.filter((r) => r.status >= 400 && !r.errorBody).length,
    status500: during.filter((r) => r.status === 500).length,
    // The first few 500s, what they were (none is expected: each is a defect to find).
    examples500: during
      .filter((r) => r.status === 500)
      .slice(0, 5)
      .map((r) => ({ op: r.op, ms: Math.round(r.ms), requestId: r.json?.error?.requestId })),
    hangs: during.filter((r) => r.status === -1).length,
    // The slowest answers (and hangs) of the phase, what they were: past the deadline, each names the path that waited.
    slowest: during
      .filter((r) => r.status !== 0)
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map((r) => ({ op: r.op, status: r.status, code: r.json?.error?.code, ms: Math.round(r.ms), at: Math.round(r.at) })),
    slowestMs: Math.round(Math.max(0, ...during.filter((r) => r.status > 0).map((r) => r.ms))),
    slowestErrorMs: Math.round(Math.max(0, ...errors.filter((r) => r.status > 0).map((r) => r.ms))),
    healedAfterMs: Math.round(healedAt - injectAt),
    recoveredMs: recoveredMs === null ? null : Math.round(recoveredMs),
  };
}

async function main() {
  const started = Date.now();
  console.error('faults: starting PostgreSQL, Redis, NATS and S3 of our own ...');
  const backends = await startBackends();
  let platform;
  try {
    console.error('faults: starting every service as its own process ...');
    platform = await startPlatform(backends, { deadlineMs: DEADLINE_MS });
    // Four people, so the load is not one account's; keys made before the faults.
    const keys = [];
    for (const name of ['Ada', 'Bo', 'Cy', 'Di']) {
      const r = await send(platform.url, platform.bootstrapKey, 'POST', '/accounts', { body: { kind: 'user', name }, timeoutMs: 15_000 });
      if (r.status !== 201) throw new Error(`creating an account: ${r.status} ${JSON.stringify(r.json)}`);
      keys.push(r.json.key);
    }
    // An account of its own for the upload across a freeze of the drive (probe.js): its uploads are only the probe's.
    const prober = await send(platform.url, platform.bootstrapKey, 'POST', '/accounts', { body: { kind: 'user', name: 'Pat' }, timeoutMs: 15_000 });
    if (prober.status !== 201) throw new Error(`creating the probe's account: ${prober.status} ${JSON.stringify(prober.json)}`);
    const acked = [];
    const phases = [];
    const extra = {};
    for (const spec of faultList(platform.names)) {
      const fault = faultOf(spec, platform, backends);
      const down = spec.endsWith('-down');
      const injectAt = 3000;
      const phaseMs = (down ? DOWN + 12 : SECONDS) * 1000;
      const t0 = performance.now();
      let stopped = false;
      const records = [];
      const pending = new Set();
      // An answer slower than the deadline (plus a second of this loaded machine) is logged as it comes.
      const onSlow = (r) =>
        console.error(
          `faults: ${spec}: slow answer: ${r.op} ${r.status}${r.json?.error?.code ? ` ${r.json.error.code}` : ''} after ${Math.round(r.ms)} ms (sent at ${Math.round(r.at - r.ms)} ms)`,
        );
      const load = runLoad({
        url: platform.url,
        keys,
        clients: CLIENTS,
        timeoutMs: TIMEOUT_MS,
        t0,
        stop: () => stopped,
        acked,
        records,
        pending,
        slowMs: DEADLINE_MS + 1000,
        onSlow,
      });
      const revocation = spec === 'redis-down' ? await revocationBefore(platform) : undefined;
      const probe =
        spec === 'slow:drive'
          ? await uploadAcrossFreeze({
              url: platform.url,
              key: prober.json.key,
              accountId: prober.json.account.id,
              pgUrl: backends.pg.url,
              timeoutMs: TIMEOUT_MS,
            })
          : undefined;
      await sleep(Math.max(0, injectAt - (performance.now() - t0)));
      console.error(`faults: ${spec} ...`);
      await fault.inject();
      // A request for the killed service while it is down: 503 with the contract's body, at once.
      const whileDown = DOWN_PROBES[spec] ? await send(platform.url, keys[0], 'GET', DOWN_PROBES[spec], { timeoutMs: TIMEOUT_MS }) : undefined;
      if (revocation) await revocation.during();
      const probed = probe?.whileFrozen();
      await fault.heal();
      const healedAt = performance.now() - t0;
      if (revocation) extra.revocation = await revocation.after();
      // Recovery is measured once the part is ready again (a restarted service has migrated and
      // reports healthy): before that, a quiet moment can be only the mix not reaching it.
      await platform.ready(60_000).catch(() => {});
      await sleep(Math.max(0, phaseMs - (performance.now() - t0)));
      // Then on until the answers have been clean for 3 s (recovered), or 60 s more (not recovered).
      for (const until = performance.now() + 60_000; performance.now() < until; await sleep(250)) {
        const now = performance.now() - t0;
        const errors = records.filter((r) => r.at >= injectAt && isError(r));
        const last = errors.length ? errors[errors.length - 1].at : 0;
        if (now - last >= 3000 && records.some((r) => r.at > last + 2000)) break;
      }
      stopped = true;
      // What is still waiting for an answer when the phase ends (none should wait past the client's patience).
      const now = performance.now() - t0;
      for (const p of pending) console.error(`faults: ${spec}: still waiting: ${p.op} (client ${p.client}) for ${Math.round(now - p.sentAt)} ms`);
      await load;
      const endAt = performance.now() - t0;
      const summary = summarize(spec, records, injectAt, healedAt, endAt);
      if (whileDown)
        summary.whileDown = {
          status: whileDown.status,
          code: whileDown.json?.error?.code,
          errorBody: whileDown.errorBody,
          ms: Math.round(whileDown.ms),
        };
      if (probed) summary.uploadAcrossFreeze = await probed;
      // What the services logged of each 500 (by its request id).
      for (const e of summary.examples500) {
        for (const name of platform.names) {
          for (const line of platform.logs(name).split('\n'))
            if (e.requestId && line.includes(e.requestId)) console.error(`faults: ${name}: ${line.slice(0, 2000)}`);
        }
      }
      phases.push(summary);
      console.error(`faults: ${spec}: ${JSON.stringify(summary)}`);
      // Between faults: the platform must be whole again before the next one.
      await platform.ready(60_000);
    }
    console.error('faults: reading back every acknowledged write ...');
    const checks = await verify({ platform, backends, keys, acked });
    const report = { seconds: Math.round((Date.now() - started) / 1000), clients: CLIENTS, deadlineMs: DEADLINE_MS, phases, ...extra, checks };
    const out = arg('json');
    if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
    printTable(report);
    const failed =
      checks.lost.length ||
      checks.runsUnfinished ||
      checks.unpublished ||
      checks.doubled ||
      checks.missingEvents ||
      phases.some(
        (p) =>
          p.status500 || p.hangs || p.withoutErrorBody || p.recoveredMs === null || (p.uploadAcrossFreeze && !acrossFreezeOk(p.uploadAcrossFreeze)),
      ) ||
      (extra.revocation && !extra.revocation.failClosed);
    process.exitCode = failed ? 1 : 0;
  } finally {
    await platform?.close();
    await backends.close();
  }
}

/**
 * The upload whose commit went to the stopped drive (probe.js) answered 503 or 504 within the
 * deadline, give or take the object store's write and this loaded machine (3 s): it once waited
 * until the drive was back, 8 s.
 */
function acrossFreezeOk(u) {
  return u.begun && (u.status === 503 || u.status === 504) && u.ms <= DEADLINE_MS + 3000;
}

/**
 * Revocation while Redis is down: a key used (so cached) before the outage, revoked during it, is
 * refused at once and stays refused after Redis is back (whose entry for it the revocation could
 * not delete).
 */
async function revocationBefore(platform) {
  const opts = { timeoutMs: TIMEOUT_MS };
  // An account of its own: the mix's accounts may have spent their key creations of the minute.
  const owner = await send(platform.url, platform.bootstrapKey, 'POST', '/accounts', { ...opts, body: { kind: 'user', name: 'Rev' } });
  if (owner.status !== 201) throw new Error(`creating the revocation check's account: ${owner.status}`);
  const key = owner.json.key;
  const made = await send(platform.url, key, 'POST', '/api/api-keys', { ...opts, body: { name: 'revoked while redis is down' } });
  if (made.status !== 201) throw new Error(`creating the key to revoke: ${made.status}`);
  const usedBefore = await send(platform.url, made.json.key, 'GET', '/me', opts);
  const out = { usedBefore: usedBefore.status };
  return {
    async during() {
      out.revoke = (await send(platform.url, key, 'DELETE', `/api/api-keys?id=${made.json.id}`, opts)).status;
      out.usedDuring = (await send(platform.url, made.json.key, 'GET', '/me', opts)).status;
    },
    async after() {
      await sleep(1000);
      out.usedAfter = (await send(platform.url, made.json.key, 'GET', '/me', opts)).status;
      out.failClosed = out.usedBefore === 200 && out.revoke === 200 && out.usedDuring === 401 && out.usedAfter === 401;
      return out;
    },
  };
}

function printTable(report) {
  const lines = [
    '| fault | requests | ok | answers during and after the fault | 500 | no error body | hangs | slowest error | back after | recovered after |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of report.phases) {
    const statuses = Object.entries(p.byStatus)
      .filter(([s]) => s !== '200' && s !== '201')
      .map(([s, n]) => `${n}× ${s}`)
      .join(', ');
    lines.push(
      `| ${p.fault} | ${p.requests} | ${p.ok} | ${statuses || 'all 2xx'} | ${p.status500} | ${p.withoutErrorBody} | ${p.hangs} | ${p.slowestErrorMs} ms | ${(p.healedAfterMs / 1000).toFixed(1)} s | ${p.recoveredMs === null ? 'not recovered' : `${(p.recoveredMs / 1000).toFixed(1)} s`} |`,
    );
  }
  console.log(lines.join('\n'));
  for (const p of report.phases) {
    const ops = Object.entries(p.errorsByOp)
      .sort((a, b) => b[1] - a[1])
      .map(([what, n]) => `${n}× ${what}`);
    if (ops.length) console.log(`${p.fault}: errors by operation: ${ops.join(', ')}`);
  }
  const c = report.checks;
  console.log(
    `\nacknowledged writes: ${c.total} (${Object.entries(c.byKind)
      .map(([k, n]) => `${n} ${k}`)
      .join(
        ', ',
      )}), lost: ${c.lost.length}; events: ${c.events} published, ${c.unpublished} left in outboxes, ${c.doubled} doubled, ${c.missingEvents} missing from the stream`,
  );
  console.log(`agent runs: ${JSON.stringify(c.runs)}${Object.keys(c.runFailures).length ? `, failed with ${JSON.stringify(c.runFailures)}` : ''}`);
  for (const p of report.phases) {
    const u = p.uploadAcrossFreeze;
    if (u)
      console.log(
        `${p.fault}: an upload committed while the drive was stopped: ${u.begun ? `${u.status}${u.code ? ` ${u.code}` : ''} after ${u.ms} ms` : 'not begun'}${acrossFreezeOk(u) ? '' : ' (expected 503/504 within the deadline)'}`,
      );
  }
  if (report.revocation) console.log(`revocation while Redis was down: ${JSON.stringify(report.revocation)}`);
  console.log(`whole run: ${report.seconds} s, ${report.clients} clients, gRPC deadline ${report.deadlineMs} ms`);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
