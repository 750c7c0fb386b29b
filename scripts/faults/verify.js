'use strict';
// After the faults: every acknowledged write is there (a drive file with its very bytes), every
// outbox is drained, and the event stream holds each published event exactly once.
const crypto = require('node:crypto');

const { connect } = require('nats');
const pg = require('pg');

const TABLES = {
  key: 'keys.api_keys',
  agent: 'agents.agents',
  profile: 'profiles.profiles',
  version: 'profiles.versions',
  order: 'trading.orders',
  file: 'drive.items',
  thread: 'agents.threads',
};

async function verify({ platform, backends, acked }) {
  const db = new pg.Client({ connectionString: backends.pg.url });
  await db.connect();
  try {
    const lost = [];
    const byKind = {};
    for (const [kind, table] of Object.entries(TABLES)) {
      const ids = acked.filter((a) => a.kind === kind).map((a) => a.id);
      byKind[kind] = ids.length;
      const found = new Set((await db.query(`SELECT id FROM ${table} WHERE id = ANY($1)`, [ids])).rows.map((r) => r.id));
      for (const id of ids) if (!found.has(id)) lost.push({ kind, id });
    }
    // Drive content: read back through the gateway, byte for byte.
    for (const f of acked.filter((a) => a.kind === 'file')) {
      const res = await fetch(`${platform.url}/drive/${f.id}/content`, { headers: { authorization: `Bearer ${f.key}` } });
      const sha = res.ok
        ? crypto
            .createHash('sha256')
            .update(Buffer.from(await res.arrayBuffer()))
            .digest('hex')
        : `HTTP ${res.status}`;
      if (sha !== f.sha256) lost.push({ kind: 'file content', id: f.id, got: sha });
    }

    // Runs: none left queued or running once the runtime has had time (a run whose worker died is
    // taken over after its lease); failed ones are counted, not lost.
    let runs;
    for (const until = Date.now() + 90_000; ;) {
      runs = Object.fromEntries(
        (await db.query(`SELECT status, count(*)::int AS n FROM agents.runs GROUP BY status`)).rows.map((r) => [r.status, r.n]),
      );
      if (!runs.queued && !runs.running) break;
      if (Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 1000));
    }

    // Outboxes: drained within 30 s of the last fault (the relays retry on their own).
    const schemas = (await db.query(`SELECT table_schema FROM information_schema.tables WHERE table_name = 'outbox'`)).rows.map(
      (r) => r.table_schema,
    );
    let unpublished = 0;
    for (const until = Date.now() + 30_000; ;) {
      unpublished = 0;
      for (const s of schemas) unpublished += Number((await db.query(`SELECT count(*) FROM ${s}.outbox WHERE published_at IS NULL`)).rows[0].count);
      if (unpublished === 0 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const outboxIds = new Set();
    for (const s of schemas) for (const r of (await db.query(`SELECT id FROM ${s}.outbox`)).rows) outboxIds.add(r.id);

    // The stream: every message's event id, read with an ordered consumer from the start.
    const nc = await connect({ servers: backends.nats.url });
    const seen = new Map();
    let messages = 0;
    try {
      const js = nc.jetstream();
      const jsm = await nc.jetstreamManager();
      const info = await jsm.streams.info('FAULTS');
      const total = info.state.messages;
      const consumer = await js.consumers.get('FAULTS');
      while (messages < total) {
        const batch = await consumer.fetch({ max_messages: 500, expires: 2000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          messages++;
          const id = JSON.parse(Buffer.from(m.data).toString('utf8')).id;
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
        if (got === 0) break;
      }
    } finally {
      await nc.close();
    }
    const doubled = [...seen.values()].filter((n) => n > 1).length;
    const missingEvents = [...outboxIds].filter((id) => !seen.has(id)).length;
    const runsUnfinished = (runs.queued ?? 0) + (runs.running ?? 0);
    const runFailures = Object.fromEntries(
      (await db.query(`SELECT error->>'code' AS code, count(*)::int AS n FROM agents.runs WHERE status = 'failed' GROUP BY 1`)).rows.map((r) => [
        r.code,
        r.n,
      ]),
    );
    return {
      total: acked.length,
      byKind,
      lost,
      runs,
      runFailures,
      runsUnfinished,
      unpublished,
      events: outboxIds.size,
      streamMessages: messages,
      doubled,
      missingEvents,
    };
  } finally {
    await db.end();
  }
}

module.exports = { verify };
