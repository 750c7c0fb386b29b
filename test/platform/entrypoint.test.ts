import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

import { GRPC_SERVICE_NAMES } from '@svc/kit';

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
  const others = await Promise.all(GRPC_SERVICE_NAMES.filter((s) => s !== 'keys').map((s) => start(s, { SVC_KEYS_ADDR: keys.address })));
  for (const s of others) {
    // Seven embedded databases start at once: 53-64 s at load 13-17 on two cores, over 90 s at 20-28.
    await waitFor(async () => ((await health(s.address)) === 'SERVING' ? true : undefined), 180_000, s.address).catch((err) => {
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
}, 360_000);

test('a service whose dependency is not up waits for it; SIGTERM during the start ends the process cleanly', async () => {
  // accounts imports the operator's key through keys at start; nothing listens at this address.
  // A database of its own (the other tests' accounts has already bootstrapped in the shared one).
  const own = REAL.pg ? await createDatabase(REAL.pg) : undefined;
  const fresh: Record<string, string> = own ? { DATABASE_URL: own.url } : {};
  const nowhere = `127.0.0.1:${await freePort()}`;
  const waiting = await start('accounts', { ...fresh, SVC_KEYS_ADDR: nowhere, LOG_LEVEL: 'info' });
  await waitFor(async () => (waiting.child.output().includes('waiting for the keys service to start') ? true : undefined), 90_000, 'the wait').catch(
    (err) => {
      throw new Error(`${(err as Error).message}\n${waiting.child.output()}`);
    },
  );
  waiting.child.kill('SIGTERM');
  expect(await exitCode(waiting.child)).toBe(0);
  expect(waiting.child.output()).toContain('stopped while starting');

  // Past SVC_START_WAIT_SECONDS it gives up, saying what it waited for.
  const bounded = await start('accounts', { ...fresh, SVC_KEYS_ADDR: nowhere, SVC_START_WAIT_SECONDS: '1' });
  expect(await exitCode(bounded.child, 90_000)).toBe(1);
  expect(bounded.child.output()).toContain('waiting for the keys service to start');
  expect(bounded.child.output()).toMatch(/svc: failed to start: Error: the keys service did not start within 1000 ms \(SVC_START_WAIT_SECONDS\)/);
  await own?.drop();
}, 200_000);

test('SVC_MIGRATE_ONLY runs the migrations and exits', async () => {
  const { child } = await start('keys', { SVC_MIGRATE_ONLY: 'true' });
  expect(await exitCode(child, 60_000)).toBe(0);
}, 70_000);

test('a bad setting stops the start with a message naming it', async () => {
  const { child } = await start('keys', { PORT: 'eighty' });
  expect(await exitCode(child)).toBe(1);
  expect(child.output()).toMatch(/invalid configuration:\n {2}PORT:/);
});
