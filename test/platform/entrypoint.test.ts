import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

import { createDatabase, REAL, tempDir } from '../support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';

// The image runs every service from one entrypoint; SVC_SERVICE picks which (Kubernetes runs one
// per Deployment). Embedded backends here: the point is the entrypoint, not the backends.
const SECRET = 'entrypoint-test-secret-'.padEnd(48, 'x');
const Health = grpc.makeClientConstructor(healthService as unknown as grpc.ServiceDefinition, 'Health');

function health(address: string): Promise<string> {
  const c = new Health(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(r: object, o: object, cb: (e: Error | null, r: { status: string }) => void): void;
  };
  return new Promise((resolve, reject) =>
    c.check({ service: '' }, { deadline: Date.now() + 1000 }, (err, res) => {
      c.close();
      if (err) reject(err);
      else resolve(res.status);
    }),
  );
}

const children: Array<ReturnType<typeof spawnSvc>> = [];
// With a real PostgreSQL the services share one fresh database (a schema each), as in a cluster;
// otherwise each process opens its own PGlite, which is slower to start on two cores.
let database: { url: string; drop(): Promise<void> } | undefined;
beforeAll(async () => {
  if (REAL.pg) database = await createDatabase(REAL.pg);
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await database?.drop();
});

async function start(service: string, extra: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawnSvc({
    SVC_SERVICE: service,
    GRPC_PORT: String(port),
    SVC_INTERNAL_SECRET: SECRET,
    SVC_DATA_DIR: tempDir(),
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...extra,
  });
  children.push(child);
  return { child, address: `127.0.0.1:${port}` };
}

test('each service starts alone from SVC_SERVICE, serves gRPC health, and drains on SIGTERM', async () => {
  const keys = await start('keys');
  await waitFor(async () => ((await health(keys.address)) === 'SERVING' ? true : undefined), 90_000, 'keys');
  // accounts bootstraps the operator through keys, found by SVC_KEYS_ADDR.
  const others = await Promise.all(
    ['accounts', 'drive', 'agents', 'models', 'trading', 'profiles', 'mcp'].map((s) => start(s, { SVC_KEYS_ADDR: keys.address })),
  );
  for (const s of others) {
    await waitFor(async () => ((await health(s.address)) === 'SERVING' ? true : undefined), 90_000, s.address).catch((err) => {
      throw new Error(`${(err as Error).message}\n${s.child.output()}`);
    });
  }
  const gwPort = await freePort();
  const gateway = spawnSvc({
    SVC_SERVICE: 'gateway',
    PORT: String(gwPort),
    SVC_INTERNAL_SECRET: SECRET,
    SVC_DATA_DIR: tempDir(),
    SVC_KEYS_ADDR: keys.address,
    SVC_ACCOUNTS_ADDR: others[0]!.address,
  });
  children.push(gateway);
  await waitFor(async () => ((await fetch(`http://127.0.0.1:${gwPort}/health`)).ok ? true : undefined), 60_000, 'gateway');

  for (const c of [gateway, ...others.map((o) => o.child), keys.child]) {
    c.kill('SIGTERM');
    expect(await exitCode(c)).toBe(0);
  }
}, 240_000);

test('SVC_MIGRATE_ONLY runs the migrations and exits', async () => {
  const { child } = await start('keys', { SVC_MIGRATE_ONLY: 'true' });
  expect(await exitCode(child, 60_000)).toBe(0);
}, 70_000);

test('a bad setting stops the start with a message naming it', async () => {
  const { child } = await start('keys', { PORT: 'eighty' });
  expect(await exitCode(child)).toBe(1);
  expect(child.output()).toMatch(/invalid configuration:\n {2}PORT:/);
});
