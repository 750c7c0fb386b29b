// What a run makes on the host's backends and removes afterwards (kube/main.mjs, scripts/roll):
// a database, and the NATS streams of a namespace.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** One statement on PostgreSQL at `url` (an admin connection: CREATE / DROP DATABASE). */
export async function adminSql(url, statement) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
}

/** The JetStream streams of SVC_NAMESPACE `namespace`: its events' and work queues' (packages/kit/src/storage/bus.ts). */
export async function dropStreams(natsUrl, namespace) {
  const { connect } = require('nats');
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    for (const s of [namespace.toUpperCase(), `${namespace.toUpperCase()}_WORK`]) await jsm.streams.delete(s).catch(() => false);
  } finally {
    await nc.close();
  }
}
