// Run by scripts/image/smoke.sh inside the image (node, with the image's own pg and nats;
// NODE_PATH=/app/node_modules): creates or drops the smoke test's database, drops its NATS stream.
//   node backends.cjs create-db <postgres url> <name>
//   node backends.cjs drop-db <postgres url> <name>
//   node backends.cjs drop-stream <nats url> <namespace>   (its events' and work queues' streams)
'use strict';
const [cmd, url, name] = process.argv.slice(2);
if (!/^[a-z][a-z0-9_]*$/.test(name || '')) throw new Error(`bad name ${name}`);

async function sql(statement) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function dropStream() {
  const { connect } = require('nats');
  const nc = await connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager();
    // The events' stream and the work queues' (packages/kit/src/storage/bus.ts).
    for (const stream of [name.toUpperCase(), `${name.toUpperCase()}_WORK`]) await jsm.streams.delete(stream).catch(() => false);
  } finally {
    await nc.close();
  }
}

const commands = {
  'create-db': () => sql(`CREATE DATABASE "${name}"`),
  'drop-db': () => sql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  'drop-stream': dropStream,
};
if (!commands[cmd]) throw new Error(`unknown command ${cmd}`);
commands[cmd]().catch((err) => {
  process.stderr.write(`backends.cjs ${cmd}: ${err.message}\n`);
  process.exit(1);
});
