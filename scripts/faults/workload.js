'use strict';
// The mixed workload: clients that create and read through the gateway (API keys, agents, drive
// uploads, profiles with commits, paper orders) and remember every write that was acknowledged
// (2xx), so that each can be read back after the faults. Every answer is recorded: when, what,
// status, how long, and whether an error carried the contract's body.
const crypto = require('node:crypto');

/** A request's outcome. `status` 0: no answer (connection refused or reset); -1: no answer within the client's timeout (a hang). */
async function send(url, key, method, path, { body, raw, type, timeoutMs, headers: extra = {} }) {
  const started = performance.now();
  const headers = { authorization: `Bearer ${key}`, ...extra };
  let payload;
  if (raw !== undefined) {
    headers['content-type'] = type ?? 'application/octet-stream';
    payload = raw;
  } else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  // The client's patience is its own timer, and the answer is raced against it: a fetch that does
  // not settle when aborted still ends as a hang here, so a client never waits past timeoutMs.
  const controller = new globalThis.AbortController();
  let timer;
  const patience = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`no answer within ${timeoutMs} ms`);
      err.name = 'TimeoutError';
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    const answer = (async () => {
      const res = await fetch(url + path, { method, headers, body: payload, signal: controller.signal });
      return { res, text: await res.text() };
    })();
    answer.catch(() => {});
    const { res, text } = await Promise.race([answer, patience]);
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const e = json?.error;
    const errorBody = res.status < 400 || (e && typeof e.code === 'string' && typeof e.message === 'string' && typeof e.requestId === 'string');
    return { status: res.status, ms: performance.now() - started, json, errorBody: Boolean(errorBody), retryAfter: res.headers.get('retry-after') };
  } catch (err) {
    const hang = err?.name === 'TimeoutError' || err?.name === 'AbortError';
    return { status: hang ? -1 : 0, ms: performance.now() - started, errorBody: false, failure: err?.cause?.code ?? err?.name };
  } finally {
    clearTimeout(timer);
  }
}

/** The operations of the mix, each a function of (client) → one or more requests; writes record what they made. */
function operations(acked) {
  const ok = (r) => r.status >= 200 && r.status < 300;
  return [
    {
      name: 'keys.create',
      async run(c) {
        const r = await c.send('POST', '/api/api-keys', { body: { name: `f-${c.seq()}` } });
        if (ok(r)) acked.push({ kind: 'key', id: r.json.id });
        return r;
      },
    },
    { name: 'keys.list', run: (c) => c.send('GET', '/api/api-keys?limit=5') },
    {
      name: 'agents.create',
      async run(c) {
        const r = await c.send('POST', '/agents', { body: { name: `agent ${c.seq()}` } });
        if (ok(r)) acked.push({ kind: 'agent', id: r.json.id });
        return r;
      },
    },
    {
      name: 'drive.upload',
      async run(c) {
        const bytes = crypto.randomBytes(512 + Math.floor(Math.random() * 8192));
        const r = await c.send('POST', `/drive/upload?name=f-${c.seq()}.bin`, { raw: bytes });
        if (ok(r)) acked.push({ kind: 'file', id: r.json.id, key: c.key, sha256: crypto.createHash('sha256').update(bytes).digest('hex') });
        return r;
      },
    },
    { name: 'drive.list', run: (c) => c.send('GET', '/drive?limit=5') },
    {
      name: 'profiles.commit',
      async run(c) {
        const made = await c.send('POST', '/profiles', { body: { name: `taste ${c.seq()}` } });
        if (!ok(made)) return made;
        acked.push({ kind: 'profile', id: made.json.id });
        const changed = await c.send('PATCH', `/profiles/${made.json.id}`, {
          body: { profileData: { workingChanges: { constraints: [{ id: 'c', question: 'Warm?', answer: 'yes' }], exemplars: [], comparisons: [] } } },
        });
        if (!ok(changed)) return changed;
        const committed = await c.send('POST', `/profiles/${made.json.id}/commits`, { body: { message: 'first' } });
        if (ok(committed)) acked.push({ kind: 'version', id: committed.json.id, profileId: made.json.id });
        return committed;
      },
    },
    {
      name: 'threads.create',
      async run(c) {
        // A thread with a first message: a run for the runtime, answered by the development model.
        if (!c.agentId) {
          const agent = await c.send('POST', '/agents', { body: { name: `thread agent ${c.seq()}` } });
          if (!ok(agent)) return agent;
          acked.push({ kind: 'agent', id: agent.json.id });
          c.agentId = agent.json.id;
        }
        const r = await c.send('POST', '/threads', { body: { agentId: c.agentId, message: `hello ${c.seq()}` } });
        if (ok(r)) acked.push({ kind: 'thread', id: r.json.id });
        return r;
      },
    },
    { name: 'models.list', run: (c) => c.send('GET', '/models') },
    {
      name: 'mcp.whoami',
      run: (c) =>
        c.send('POST', '/mcp', {
          body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } },
          headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
        }),
    },
    {
      name: 'trading.order',
      async run(c) {
        const clientOrderId = `f-${crypto.randomBytes(6).toString('hex')}`;
        const r = await c.send('POST', '/trading/order', {
          body: { symbol: 'AAPL', side: Math.random() < 0.5 ? 'buy' : 'sell', type: 'market', qty: '1', clientOrderId },
        });
        if (ok(r)) acked.push({ kind: 'order', id: r.json.id, clientOrderId });
        return r;
      },
    },
  ];
}

/**
 * Runs `clients` loops over the mix until `stop()` says so; the answers are recorded in `records`
 * as they come (`at`: ms since `t0`), which it returns; the requests waiting for an answer are in
 * `pending`, and `onSlow` hears of each answer slower than `slowMs`. Statuses the mix expects as normal answers (a paper order refused for its
 * balance, 422) count as answers, not errors.
 */
async function runLoad({
  url,
  keys,
  clients = 8,
  timeoutMs,
  t0,
  stop,
  acked,
  records = [],
  pending = new Set(),
  slowMs = Infinity,
  onSlow = () => {},
}) {
  const ops = operations(acked);
  let n = 0;
  const loop = async (w) => {
    let i = w;
    const c = {
      key: keys[w % keys.length],
      seq: () => `${w}-${++n}`,
      send: async (method, path, opts = {}) => {
        const op = `${method} ${path.split('?')[0].replace(/\/[a-z]+_[0-9a-z]{20,}/g, '/:id')}`;
        const inFlight = { op, client: w, sentAt: performance.now() - t0 };
        pending.add(inFlight);
        const r = await send(url, keys[w % keys.length], method, path, { ...opts, timeoutMs });
        pending.delete(inFlight);
        const record = { at: performance.now() - t0, op, ...r };
        records.push(record);
        if (r.ms > slowMs) onSlow(record);
        // A client that got nothing back waits a little before trying again, as a real one would.
        if (r.status <= 0) await new Promise((res) => setTimeout(res, 50));
        return r;
      },
    };
    while (!stop()) {
      const op = ops[i++ % ops.length];
      await op.run(c);
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, w) => loop(w)));
  return records;
}

module.exports = { runLoad, send };
