// The client of scripts/image/kube.sh: requests through the gateway's Service, retried only as the
// contract allows (docs/reliability.md), and a steady mixed load whose acknowledged writes are
// checked afterwards.
//
// Retried, with the same Idempotency-Key, after Retry-After (at most 2 s, at most 5 tries): 429,
// 503 with Retry-After, and 409 idempotency_key_in_use; and, after 100 ms, a request whose
// connection failed before any answer (refused, reset, closed by a stopping server): every request
// here is a GET or a POST with an Idempotency-Key, which the contract makes safe to send again.
// Each such retry is counted (`closed`). Anything else that is not 2xx is a failed request.
import { randomBytes, randomUUID } from 'node:crypto';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function client(base, key) {
  /** One call; resolves {status, body, ms, tries, error?}; never throws. */
  return async function call(method, path, { json, raw, contentType, timeoutMs = 30_000 } = {}) {
    const headers = { authorization: `Bearer ${key}` };
    if (method === 'POST') headers['idempotency-key'] = randomUUID();
    let body;
    if (json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(json);
    } else if (raw !== undefined) {
      headers['content-type'] = contentType ?? 'application/octet-stream';
      body = raw;
    }
    const t0 = performance.now();
    let closed = 0;
    for (let tries = 1; ; tries++) {
      let res;
      try {
        res = await fetch(`${base}${path}`, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      } catch (err) {
        const error = `${err.cause?.code ?? err.name}: ${err.cause?.message ?? err.message}`;
        if (err.name !== 'TimeoutError' && tries < 5) {
          closed++;
          await sleep(100);
          continue;
        }
        return { status: 0, error, ms: performance.now() - t0, tries, closed };
      }
      const buf = Buffer.from(await res.arrayBuffer());
      const text = buf.toString('utf8');
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const retryAfter = res.headers.get('retry-after');
      const retryable =
        res.status === 429 || (res.status === 503 && retryAfter !== null) || (res.status === 409 && parsed?.error?.code === 'idempotency_key_in_use');
      if (retryable && tries < 5) {
        await sleep(Math.min(2000, Number(retryAfter ?? 1) * 1000));
        continue;
      }
      return { status: res.status, body: parsed, bytes: buf, ms: performance.now() - t0, tries, closed };
    }
  };
}

const ok = (r) => r.status >= 200 && r.status < 300;

/**
 * The mix: reads that cross each service, and writes whose answers are kept to be checked
 * afterwards (profiles, drive uploads, agents, threads with a message the runtime must answer).
 */
function operations(call, ctx) {
  // A write whose acknowledged answer (2xx) is kept: its id, and the bytes sent for a file.
  const write = (name, weight, kind, send) => ({
    name,
    weight,
    run: async () => {
      const r = await send();
      if (ok(r)) ctx.writes.push({ kind, id: r.body.id, bytes: r.sent });
      return r;
    },
  });
  return [
    { name: 'GET /me', weight: 8, run: () => call('GET', '/v1/me') },
    { name: 'GET /accounts', weight: 4, run: () => call('GET', '/v1/accounts') },
    { name: 'GET /api/api-keys', weight: 4, run: () => call('GET', '/v1/api/api-keys') },
    { name: 'GET /models', weight: 4, run: () => call('GET', '/v1/models') },
    { name: 'GET /trading/watchlists', weight: 4, run: () => call('GET', '/v1/trading/watchlists') },
    { name: 'GET /profiles', weight: 3, run: () => call('GET', '/v1/profiles?limit=5') },
    { name: 'GET /drive', weight: 3, run: () => call('GET', '/v1/drive?limit=5') },
    { name: 'GET /me/threads', weight: 3, run: () => call('GET', '/v1/me/threads?limit=5') },
    { name: 'POST /code/run', weight: 2, run: () => call('POST', '/v1/code/run', { json: { code: '6 * 7' } }) },
    write('POST /profiles', 3, 'profile', () => call('POST', '/v1/profiles', { json: { name: `load ${ctx.n++}` } })),
    write('POST /drive/upload', 3, 'file', () => {
      const bytes = randomBytes(2048 + Math.floor(Math.random() * 8192));
      const name = `load-${ctx.n++}-${randomUUID().slice(0, 8)}.bin`;
      return call('POST', `/v1/drive/upload?name=${name}`, { raw: bytes }).then((r) => ({ ...r, sent: bytes }));
    }),
    write('POST /agents', 2, 'agent', () => call('POST', '/v1/agents', { json: { name: `load ${ctx.n++}` } })),
    write('POST /threads', 2, 'thread', () => call('POST', '/v1/threads', { json: { agentId: ctx.agentId, message: `hello ${ctx.n++}` } })),
  ];
}

/** Starts `workers` loops of the mix; stop() ends them and resolves with every request made. */
export function startLoad({ call, agentId, workers = 6, pauseMs = 40 }) {
  const ctx = { n: 0, writes: [], agentId };
  const ops = operations(call, ctx);
  const total = ops.reduce((a, o) => a + o.weight, 0);
  const pick = () => {
    let x = Math.random() * total;
    for (const o of ops) if ((x -= o.weight) < 0) return o;
    return ops[0];
  };
  const requests = [];
  let stopping = false;
  const loops = Array.from({ length: workers }, async () => {
    while (!stopping) {
      const op = pick();
      const at = Date.now();
      const r = await op.run();
      requests.push({
        op: op.name,
        at,
        end: Date.now(),
        status: r.status,
        ms: r.ms,
        tries: r.tries,
        closed: r.closed,
        error: r.error,
        code: r.body?.error?.code,
      });
      await sleep(pauseMs);
    }
  });
  return {
    writes: ctx.writes,
    requests,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return { requests, writes: ctx.writes };
    },
  };
}

export const failed = (r) => r.status < 200 || r.status >= 300;

/** Every acknowledged write, read back; a thread must have been answered. Returns the ones lost. */
export async function verifyWrites(call, writes) {
  const lost = [];
  const check = async (w) => {
    if (w.kind === 'profile') {
      const r = await call('GET', `/v1/profiles/${w.id}`);
      if (!ok(r)) lost.push({ ...w, status: r.status });
    } else if (w.kind === 'agent') {
      const r = await call('GET', `/v1/agents/${w.id}`);
      if (!ok(r)) lost.push({ ...w, status: r.status });
    } else if (w.kind === 'file') {
      const r = await call('GET', `/v1/drive/${w.id}/content`);
      if (!ok(r) || !r.bytes.equals(w.bytes)) lost.push({ kind: w.kind, id: w.id, status: r.status, sameBytes: ok(r) && r.bytes.equals(w.bytes) });
    } else if (w.kind === 'thread') {
      const r = await call('POST', `/v1/threads/${w.id}/wait`, { json: { timeoutMs: 30_000 }, timeoutMs: 40_000 });
      if (!ok(r) || r.body.timedOut || !r.body.lastReply)
        lost.push({ ...w, status: r.status, timedOut: r.body?.timedOut, reply: !!r.body?.lastReply });
    }
  };
  for (let i = 0; i < writes.length; i += 8) await Promise.all(writes.slice(i, i + 8).map(check));
  return lost;
}

/** p-th percentile of a list of numbers. */
export function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** The requests made from `from` to `to` (ms): how many, the failed ones, how many were retried and why, p99. */
export function summarize(requests, from, to) {
  const during = requests.filter((r) => r.at >= from && r.at <= to);
  return {
    seconds: Math.round((to - from) / 1000),
    requests: during.length,
    failed: during.filter(failed),
    retried: during.filter((r) => r.tries > (r.closed ?? 0) + 1).length,
    closed: during.filter((r) => r.closed > 0).length,
    p99: Math.round(
      percentile(
        during.map((r) => r.ms),
        99,
      ),
    ),
  };
}
