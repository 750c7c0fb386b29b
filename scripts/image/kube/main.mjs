// scripts/image/kube.sh's program: renders the chart for this machine, runs its Deployments with
// `podman kube play` (cluster.mjs), checks the platform from outside, and with --roll restarts
// every service in turn under load (docs/deploy.md#the-charts-workloads-on-podman).
//   node scripts/image/kube/main.mjs [--replicas N] [--roll]
// Environment: DATABASE_URL (an admin URL of the host's PostgreSQL), REDIS_URL, NATS_URL,
// SVC_IMAGE (localhost/svc:ci), CHECK_CHART (the shared check-chart), KUBE_RUN_ID (set by kube.sh).
import { fork, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { adminSql, dropStreams } from './admin.mjs';
import { Cluster, podman } from './cluster.mjs';
import { client, failed, percentile, startLoad, summarize, verifyWrites } from './load.mjs';

const require = createRequire(import.meta.url);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const args = process.argv.slice(2);
const roll = args.includes('--roll');
const replicas = Number(args[args.indexOf('--replicas') + 1] || 0) || (roll ? 2 : 1);
const log = (m) => process.stderr.write(`kube: ${m}\n`);
const t0 = Date.now();
const secs = (from = t0) => `${((Date.now() - from) / 1000).toFixed(0)} s`;

const runId = process.env.KUBE_RUN_ID ?? randomBytes(4).toString('hex');
const release = `kp${runId}`;
const database = `svc_kube_${runId}`;
const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const [repository, tag] = (process.env.SVC_IMAGE ?? 'localhost/svc:ci').split(/:(?=[^:/]+$)/);
const checkChart = process.env.CHECK_CHART ?? '/work/shared/tools/helm-render/check-chart';
// Stopped (kube.sh passes on INT and TERM): main's teardown still removes what was made.
const interrupted = new Promise((_, reject) => {
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => reject(new Error(`stopped by ${signal}`)));
});
interrupted.catch(() => {});
const dir = process.env.KUBE_DIR ?? mkdtempSync(join(tmpdir(), 'svc-kube-'));
for (const u of [adminUrl, redisUrl, natsUrl]) {
  if (!/^[a-z]+:\/\/([^@/]*@)?(127\.0\.0\.1|localhost)[:/]/.test(u)) throw new Error(`backends must be on loopback; got ${u}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Renders the chart for this machine and validates every object by schema (check-chart). */
function render(s3Endpoint) {
  const out = join(dir, 'rendered.yaml');
  const hex = (n) => randomBytes(n).toString('hex');
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const set = {
    'image.repository': repository,
    'image.tag': tag,
    'externalDatabase.url': url.toString(),
    'externalRedis.url': redisUrl,
    'externalNats.url': natsUrl,
    'externalS3.endpoint': s3Endpoint,
    'auth.bootstrapKey': `svc_${hex(32)}`,
    'auth.internalSecret': hex(32),
    'default.env.SVC_NAMESPACE': release,
    'default.replicas': String(replicas),
  };
  const flags = Object.entries(set).flatMap(([k, v]) => ['--set-string', `${k}=${v}`]);
  const r = spawnSync(
    checkChart,
    ['-o', out, release, join(ROOT, 'charts/svc'), '-n', 'kube-play', '-f', join(ROOT, 'charts/svc/ci/podman-values.yaml'), ...flags],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`check-chart failed:\n${r.stdout}${r.stderr}`);
  log(`rendered and validated by schema: ${`${r.stdout}${r.stderr}`.trim().split('\n').pop()}`);
  const { parseAllDocuments } = require('yaml');
  const objects = parseAllDocuments(readFileSync(out, 'utf8'))
    .map((d) => d.toJS())
    .filter(Boolean);
  return { objects, bootstrapKey: set['auth.bootstrapKey'] };
}

/** What podman cannot run, and what stands in for it here. */
function describeObjects(objects) {
  const kinds = new Map();
  for (const o of objects) kinds.set(o.kind, [...(kinds.get(o.kind) ?? []), o.metadata.name]);
  const how = {
    Deployment: 'run: each replica its pod template, played as a Pod',
    Secret: 'podman secrets (what secretKeyRef reads)',
    Service: 'not run by podman: a TCP proxy per Service on its own loopback address, to the ready pods it selects',
    Job: 'Helm hooks (migrations): each played as a Pod after the Deployments are ready (post-install), exit 0 required',
  };
  for (const [kind, names] of kinds) {
    log(`${kind} (${names.length}): ${how[kind] ?? 'not run by podman (no such thing without a cluster); validated by schema only'}`);
  }
}

/** The post-install hook Jobs: their pod templates played as Pods (one `kube play` at a time, see cluster.mjs); each must exit 0. */
async function runJobs(cluster, jobs) {
  const played = [];
  for (const [i, job] of jobs.entries()) {
    const name = `${job.metadata.name}-${i}`.slice(0, 63);
    const spec = JSON.parse(JSON.stringify(job.spec.template.spec));
    spec.hostNetwork = true;
    spec.volumes = [...(spec.volumes ?? []), { name: 'cluster-dns', hostPath: { path: cluster.hostsFile, type: 'File' } }];
    for (const c of spec.containers) c.volumeMounts = [...(c.volumeMounts ?? []), { name: 'cluster-dns', mountPath: '/etc/hosts', readOnly: true }];
    const labels = { ...job.spec.template.metadata.labels, 'svc.dev/kube-run': runId };
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec }));
    await podman('kube', 'play', '--quiet', file);
    played.push({ job, name, container: `${name}-${spec.containers[0].name}` });
  }
  await Promise.all(
    played.map(async ({ job, name, container }) => {
      const code = await podman('wait', container);
      if (code !== '0')
        throw new Error(`Job ${job.metadata.name} exited ${code}:\n${await podman('logs', '--tail', '20', container).catch(() => '')}`);
      await podman('pod', 'rm', '-f', '-t', '0', name);
    }),
  );
}

const expectOk = (what, r) => {
  if (r.status < 200 || r.status >= 300) throw new Error(`${what}: ${r.status} ${r.error ?? JSON.stringify(r.body)}`);
  return r.body;
};

/** The checks from outside, through the gateway's Service. Returns the user's key and an agent. */
async function checkPlatform(base, bootstrapKey) {
  const res = await fetch(`${base}/v1/ready`);
  if (res.status !== 200) throw new Error(`GET /v1/ready: ${res.status} ${await res.text()}`);
  log('gateway: GET /v1/ready 200');
  const operator = client(base, bootstrapKey);
  const me = expectOk('GET /v1/me (gateway -> keys -> accounts -> SQL)', await operator('GET', '/v1/me'));
  log(`GET /v1/me with the bootstrap key: account ${me.accountId} (gateway -> keys -> accounts -> SQL)`);
  const person = expectOk('POST /v1/accounts', await operator('POST', '/v1/accounts', { json: { kind: 'user', name: 'kube play' } }));
  const call = client(base, person.key);
  const agent = expectOk('POST /v1/agents', await call('POST', '/v1/agents', { json: { name: 'kube play' } }));
  const thread = expectOk('POST /v1/threads', await call('POST', '/v1/threads', { json: { agentId: agent.id, message: 'hello from kube play' } }));
  const waited = expectOk(
    'POST /v1/threads/:id/wait',
    await call('POST', `/v1/threads/${thread.id}/wait`, { json: { timeoutMs: 30_000 }, timeoutMs: 40_000 }),
  );
  if (waited.timedOut || !waited.lastReply) throw new Error(`the runtime did not answer the thread: ${JSON.stringify(waited)}`);
  log(`a thread answered by the runtime: ${JSON.stringify(String(waited.lastReply.content).slice(0, 60))}`);
  const bytes = randomBytes(100_000);
  const file = expectOk('POST /v1/drive/upload', await call('POST', '/v1/drive/upload?name=kube-play.bin', { raw: bytes }));
  const back = await call('GET', `/v1/drive/${file.id}/content`);
  if (back.status !== 200 || !back.bytes.equals(bytes)) throw new Error(`drive: the upload did not read back (${back.status})`);
  log(`a drive upload (100000 bytes, to S3 through the gateway and drive) read back equal`);
  return { call, agentId: agent.id };
}

/** Rolls every Deployment in turn under load; the measurement per restart. */
async function rollAll(cluster, call, agentId) {
  const load = startLoad({ call, agentId });
  await new Promise((r) => setTimeout(r, 10_000));
  const phases = [];
  for (const dep of cluster.deployments) {
    const name = dep.metadata.labels['app.kubernetes.io/component'];
    const from = Date.now();
    const stops = await cluster.rollout(dep.metadata.name, 240_000);
    phases.push({ name, from, to: Date.now(), stops });
    const during = load.requests.filter((r) => r.at >= from);
    const bad = during.filter(failed);
    const closed = during.filter((r) => r.closed > 0).length;
    const detail = bad.map((r) => `${r.op} ${r.status} ${r.code ?? r.error ?? ''}`).join('; ');
    const p99 = Math.round(
      percentile(
        during.map((r) => r.ms),
        99,
      ),
    );
    log(
      `${name}: rolled in ${secs(from)}: ${during.length} requests, ${bad.length} failed${detail ? ` (${detail})` : ''}, ${closed} retried after a closed connection, p99 ${p99} ms`,
    );
    log(`${name}: ${stops.map((s) => `${s.pod} exit ${s.exitCode}, preStop ${s.preStopMs} ms, stop ${s.stopMs} ms`).join('; ')}`);
    for (const s of stops) if (s.exitCode !== 0) log(`${s.pod} exited ${s.exitCode}; its last lines:\n${s.logs}`);
  }
  await new Promise((r) => setTimeout(r, 5_000));
  const { requests, writes } = await load.stop();
  const lost = await verifyWrites(call, writes);
  const rows = phases.map((p) => {
    const s = summarize(requests, p.from, p.to);
    return { ...s, service: p.name, failed: s.failed.length, badExits: p.stops.filter((x) => x.exitCode !== 0).length };
  });
  return { rows, requests, writes, lost };
}

function report({ rows, requests, writes, lost }) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const out = [
    line(['service restarted', 'restart (s)', 'requests', 'failed', 'retried: 429/503', 'retried: connection closed', 'p99 (ms)', 'non-zero exits']),
    line(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    ...rows.map((r) => line([r.service, r.seconds, r.requests, r.failed, r.retried, r.closed, r.p99, r.badExits])),
  ];
  const fails = requests.filter(failed);
  out.push(
    '',
    `${requests.length} requests in all, ${fails.length} failed, p99 ${Math.round(
      percentile(
        requests.map((r) => r.ms),
        99,
      ),
    )} ms;`,
  );
  out.push(`${writes.length} acknowledged writes read back, ${lost.length} lost.`);
  for (const f of fails.slice(0, 20)) out.push(`failed: ${f.op} ${f.status} ${f.code ?? f.error ?? ''} at +${f.at - t0} ms`);
  for (const l of lost.slice(0, 20)) out.push(`lost: ${JSON.stringify(l)}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return fails.length === 0 && lost.length === 0 && rows.every((r) => r.badExits === 0);
}

/** The run: setup, pods, checks and (--roll) the restarts; `state` holds what teardown removes. */
async function steps(state) {
  // s3rver in a process of its own (scripts/faults/s3.js: an error of its streams is logged, not fatal).
  mkdirSync(join(dir, 's3'));
  const s3Port = await freePort();
  state.s3 = fork(join(ROOT, 'scripts/faults/s3.js'), [join(dir, 's3'), String(s3Port)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise((resolve, reject) => state.s3.once('message', resolve).once('exit', (code) => reject(new Error(`s3rver exited ${code}`))));
  await adminSql(adminUrl, `CREATE DATABASE "${database}"`);
  state.dbCreated = true;
  const { objects, bootstrapKey } = render(`http://127.0.0.1:${s3Port}`);
  describeObjects(objects);
  const cluster = (state.cluster = new Cluster({ objects, runId, dir, log }));
  await cluster.createSecrets();
  await cluster.startServices();
  const pods = await cluster.scaleAll(300_000);
  log(`${pods.length} pods (${cluster.deployments.length} Deployments x ${replicas}) ready after ${secs()}, one container each`);
  const running = (await podman('ps', '--filter', `label=svc.dev/kube-run=${runId}`, '--format', '{{.Names}}'))
    .split('\n')
    .filter((n) => !n.endsWith('-infra'));
  if (running.length !== pods.length) throw new Error(`expected ${pods.length} running containers, found ${running.length}`);
  const jobs = objects.filter((o) => o.kind === 'Job');
  const jobsFrom = Date.now();
  await runJobs(cluster, jobs);
  log(`${jobs.length} migration Jobs (post-install hooks) exited 0 in ${secs(jobsFrom)}`);
  const base = `http://${cluster.serviceAddress(`${release}-svc-gateway`, 8080)}`;
  const { call, agentId } = await checkPlatform(base, bootstrapKey);
  // While everything starts at once, a service may exit and be restarted (as kubelet restarts
  // it) until the ones it needs are up; that is reported, not failed. After, a restart fails.
  if (cluster.restarts.length) log(`restarts while starting: ${cluster.restarts.map((r) => `${r.pod}: ${r.why}`).join('; ')}`);
  const startupRestarts = cluster.restarts.length;
  log(`checks passed after ${secs()}`);
  if (roll) {
    const result = await rollAll(cluster, call, agentId);
    const late = cluster.restarts.slice(startupRestarts);
    if (late.length) log(`containers restarted during the rolling restarts: ${JSON.stringify(late)}`);
    if (!report(result) || late.length) throw new Error('the rolling restarts failed requests, lost writes or restarted containers (above)');
    log(`rolling restarts passed after ${secs()}`);
  }
}

async function teardown({ cluster, s3, dbCreated }, failedRun) {
  if (cluster && failedRun) {
    for (const p of cluster.pods.filter((x) => !x.ready)) {
      log(`--- ${p.name} (not ready), its last lines:\n${await podman('logs', '--tail', '30', p.container).catch((e) => e.message)}`);
    }
  }
  if (cluster) await cluster.teardown().catch((err) => log(`teardown: ${err.message}`));
  s3?.kill();
  if (dbCreated)
    await adminSql(adminUrl, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch((err) => log(`could not drop ${database}: ${err.message}`));
  await dropStreams(natsUrl, release).catch((err) => log(`could not drop the NATS streams of ${release}: ${err.message}`));
  rmSync(dir, { recursive: true, force: true });
}

async function main() {
  const state = {};
  let failedRun = true;
  try {
    await Promise.race([steps(state), interrupted]);
    failedRun = false;
  } finally {
    await teardown(state, failedRun);
  }
}

main().then(
  () => {
    log(`passed in ${secs()}`);
    process.exit(0);
  },
  (err) => {
    log(`FAILED after ${secs()}: ${err.stack ?? err}`);
    process.exit(1);
  },
);
