// A small stand-in for the parts of Kubernetes that `podman kube play` (4.3) does not do, around
// pods that it does run (scripts/image/kube.sh, docs/deploy.md#the-charts-workloads-on-podman):
//   - kubelet: every pod of a Deployment is its pod template played as a Pod; its probes
//     (startup, liveness, readiness: httpGet, tcpSocket, grpc) run from here with the rendered
//     timings; a stopping pod runs its preStop hook, then gets SIGTERM, then SIGKILL at the end
//     of terminationGracePeriodSeconds;
//   - the Deployment controller: replicas, and a rolling restart by the rendered strategy
//     (maxSurge new pods ready before maxUnavailable old ones go);
//   - kube-proxy and cluster DNS: each Service is a TCP proxy on its own loopback address and
//     port, to the ready pods its selector matches (a terminating pod is no endpoint); every pod
//     gets a read-only /etc/hosts that names the Services.
// Every pod shares the host's network (hostNetwork) and is given its own loopback address
// (127.b.x.y) as HOST and GRPC_HOST, so that each listens where the chart says (8080, 50051)
// and nothing listens beyond loopback.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function podman(...args) {
  const { stdout } = await run('podman', args, { maxBuffer: 64 << 20 });
  return stdout.trim();
}

const matches = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
/** Kubernetes' rounding of a percentage of replicas: up for maxSurge, down for maxUnavailable. */
const count = (v, replicas, up) => {
  const m = /^(\d+)%$/.exec(String(v));
  if (!m) return Number(v);
  return (up ? Math.ceil : Math.floor)((Number(m[1]) * replicas) / 100);
};

export class Cluster {
  /** objects: the rendered manifests; runId labels every pod; dir holds the generated files. */
  constructor({ objects, runId, dir, log }) {
    this.objects = objects;
    this.runId = runId;
    this.dir = dir;
    this.log = log;
    this.pods = [];
    this.proxies = [];
    this.restarts = [];
    this.serial = 0;
    this.deployments = objects.filter((o) => o.kind === 'Deployment');
    this.services = objects.filter((o) => o.kind === 'Service');
    // A /16 of loopback per run (from its id, so that two runs on one machine do not collide):
    // Service i listens on 127.b.0.(i+1), the pods of Deployment d on 127.b.(d+1).n.
    this.net = 16 + (parseInt(runId.slice(0, 4), 16) % 224);
    this.serviceIp = new Map(this.services.map((s, i) => [s.metadata.name, `127.${this.net}.0.${i + 1}`]));
    this.hostsFile = join(dir, 'hosts');
    const lines = ['127.0.0.1\tlocalhost', ...this.services.map((s) => `${this.serviceIp.get(s.metadata.name)}\t${s.metadata.name}`)];
    writeFileSync(this.hostsFile, `${lines.join('\n')}\n`);
  }

  /** The rendered Secrets as podman secrets (what secretKeyRef reads in podman 4.3: a JSON map of base64 values). */
  async createSecrets() {
    for (const s of this.objects.filter((o) => o.kind === 'Secret')) {
      const data = { ...(s.data ?? {}) };
      for (const [k, v] of Object.entries(s.stringData ?? {})) data[k] = Buffer.from(v).toString('base64');
      const file = join(this.dir, `secret-${s.metadata.name}.json`);
      writeFileSync(file, JSON.stringify(data), { mode: 0o600 });
      await podman('secret', 'create', s.metadata.name, file);
    }
  }

  /** A TCP proxy per Service: its address and ports, to the ready pods it selects. */
  async startServices() {
    for (const svc of this.services) {
      const ip = this.serviceIp.get(svc.metadata.name);
      for (const port of svc.spec.ports) {
        let next = 0;
        const server = createServer((client) => {
          const ready = this.pods.filter((p) => p.ready && !p.terminating && matches(svc.spec.selector, p.labels));
          if (ready.length === 0) return client.destroy();
          const pod = ready[next++ % ready.length];
          const upstream = createConnection({ host: pod.ip, port: pod.port(port.targetPort) });
          client.pipe(upstream).pipe(client);
          const end = () => {
            client.destroy();
            upstream.destroy();
          };
          client.on('error', end).on('close', end);
          upstream.on('error', end).on('close', end);
        });
        await new Promise((resolve, reject) => server.once('error', reject).listen(port.port, ip, resolve));
        this.proxies.push(server);
      }
    }
  }

  /** The address of a Service's port, as a client in the cluster reaches it. */
  serviceAddress(name, port) {
    return `${this.serviceIp.get(name)}:${port}`;
  }

  deployment(name) {
    const d = this.deployments.find((x) => x.metadata.name === name);
    if (!d) throw new Error(`no Deployment ${name}`);
    return d;
  }

  /** Plays one pod of a Deployment: its pod template as a Pod, changed only as the header says. */
  async startPod(dep) {
    const d = this.deployments.indexOf(dep) + 1;
    const n = ++this.serial;
    const ip = `127.${this.net}.${d}.${n}`;
    const name = `${dep.metadata.name}-${n}`;
    const template = JSON.parse(JSON.stringify(dep.spec.template));
    const spec = template.spec;
    spec.hostNetwork = true;
    spec.volumes = [...(spec.volumes ?? []), { name: 'cluster-dns', hostPath: { path: this.hostsFile, type: 'File' } }];
    const ports = new Map(spec.containers.flatMap((c) => (c.ports ?? []).map((p) => [p.name, p.containerPort])));
    const probes = [];
    for (const c of spec.containers) {
      c.env = [...(c.env ?? []), { name: 'HOST', value: ip }, { name: 'GRPC_HOST', value: ip }];
      c.volumeMounts = [...(c.volumeMounts ?? []), { name: 'cluster-dns', mountPath: '/etc/hosts', readOnly: true }];
      // podman 4.3 turns a livenessProbe into a `curl` healthcheck (no curl in the image, and no
      // systemd timer to run it) and ignores the others: they run from here instead.
      probes.push({ container: c.name, startup: c.startupProbe, liveness: c.livenessProbe, readiness: c.readinessProbe, lifecycle: c.lifecycle });
      delete c.startupProbe;
      delete c.livenessProbe;
      delete c.readinessProbe;
      // podman 4.3 makes port mappings of containerPorts, which host networking refuses; they
      // only name the ports here (the probes' and Services' targetPort), as in a cluster.
      delete c.ports;
    }
    const labels = { ...template.metadata.labels, 'svc.dev/kube-run': this.runId };
    // podman 4.3 refuses an annotation value over 63 characters (Kubernetes has no such limit):
    // the config checksum, which only makes a Deployment roll, is left out.
    const annotations = Object.fromEntries(Object.entries(template.metadata.annotations ?? {}).filter(([, v]) => String(v).length <= 63));
    const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels, annotations }, spec };
    const file = join(this.dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(manifest));
    const pod = {
      name,
      ip,
      dep: dep.metadata.name,
      labels: template.metadata.labels,
      container: `${name}-${spec.containers[0].name}`,
      grace: spec.terminationGracePeriodSeconds ?? 30,
      probes: probes[0],
      started: false,
      ready: false,
      terminating: false,
      createdAt: Date.now(),
      port: (p) => (typeof p === 'number' ? p : ports.get(p)),
    };
    this.pods.push(pod);
    await podman('kube', 'play', '--quiet', file);
    pod.prober = this.probe(pod);
    return pod;
  }

  /** kubelet's probes: startup until it passes, then liveness and readiness, each on its own period. */
  async probe(pod) {
    const { startup, liveness, readiness } = pod.probes;
    const check = (spec) => probeOnce(pod, spec);
    // A restarted container starts probing anew; the loops of the one before end.
    const generation = (pod.generation = (pod.generation ?? 0) + 1);
    const live = () => !pod.terminating && pod.generation === generation;
    if (startup) {
      const ok = await this.until(pod, startup, check);
      if (!live()) return;
      if (!ok && !(await this.exited(pod))) return this.restart(pod, 'startup probe failed');
      if (!ok) return;
    }
    pod.started = true;
    const loops = [];
    if (readiness) {
      loops.push(
        (async () => {
          let fails = 0;
          let oks = 0;
          while (live()) {
            const ok = await check(readiness);
            fails = ok ? 0 : fails + 1;
            oks = ok ? oks + 1 : 0;
            if (ok && oks >= (readiness.successThreshold ?? 1)) {
              if (!pod.ready) pod.readyAt = Date.now();
              pod.ready = true;
            }
            if (fails >= (readiness.failureThreshold ?? 3)) {
              pod.ready = false;
              if (await this.exited(pod)) return;
            }
            await sleep((readiness.periodSeconds ?? 10) * 1000);
          }
        })(),
      );
    } else pod.ready = true;
    if (liveness) {
      loops.push(
        (async () => {
          let fails = 0;
          while (live()) {
            await sleep((liveness.periodSeconds ?? 10) * 1000);
            if (!live()) return;
            fails = (await check(liveness)) ? 0 : fails + 1;
            if (fails > 0 && (await this.exited(pod))) return;
            if (fails >= (liveness.failureThreshold ?? 3)) return this.restart(pod, 'liveness probe failed');
          }
        })(),
      );
    }
    await Promise.all(loops);
  }

  /** Runs a probe every period until it passes (true) or fails failureThreshold times (false). */
  async until(pod, spec, check) {
    await sleep((spec.initialDelaySeconds ?? 0) * 1000);
    for (let fails = 0; fails < (spec.failureThreshold ?? 3) && !pod.terminating;) {
      if (await check(spec)) return true;
      fails++;
      await sleep((spec.periodSeconds ?? 10) * 1000);
    }
    return false;
  }

  /**
   * Whether the container exited and podman started it again (restartPolicy Always, as kubelet
   * does); if so the restart is recorded and probing starts anew with the startup probe.
   */
  async exited(pod) {
    const [count, startedAt] = (await podman('inspect', '--format', '{{.RestartCount}} {{.State.StartedAt}}', pod.container).catch(() => '')).split(
      ' ',
    );
    pod.restartCount ??= '0';
    if (count === pod.restartCount) return false;
    pod.restartCount = count;
    const logs = await podman('logs', '--tail', '12', pod.container).catch(() => '');
    const why = /svc: (failed to start: )?[^\n]*/.exec(logs)?.[0] ?? 'exited';
    this.restarts.push({ pod: pod.name, why: `the container exited (${why.slice(0, 200)}); restarted by its restartPolicy`, at: Date.now() });
    this.log(`${pod.name}: the container exited and was restarted (${why.slice(0, 200)}) at ${startedAt}`);
    pod.ready = false;
    if (!pod.terminating) pod.prober = this.probe(pod);
    return true;
  }

  /** A failed startup or liveness probe: the container is restarted (stopped with its grace period). */
  async restart(pod, why) {
    this.restarts.push({ pod: pod.name, why, at: Date.now() });
    this.log(`${pod.name}: ${why}; restarting its container`);
    pod.ready = false;
    await podman('restart', '-t', String(pod.grace), pod.container).catch((err) => this.log(`${pod.name}: restart failed: ${err.message}`));
    pod.restartCount = (await podman('inspect', '--format', '{{.RestartCount}}', pod.container).catch(() => '')) || pod.restartCount;
    if (!pod.terminating) pod.prober = this.probe(pod);
  }

  async waitReady(pods, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (pods.some((p) => !p.ready)) {
      if (Date.now() > deadline) {
        const late = pods.filter((p) => !p.ready).map((p) => p.name);
        throw new Error(`not ready after ${timeoutMs / 1000} s: ${late.join(', ')}`);
      }
      await sleep(200);
    }
  }

  /** Starts every Deployment's replicas (or `replicas` of each) and waits for all to be ready. */
  async scaleAll(timeoutMs) {
    // One `kube play` at a time: podman 4.3 races on the emptyDir volumes of pods played at
    // once ("volume already exists").
    const started = [];
    for (const dep of this.deployments) {
      for (let i = 0; i < (dep.spec.replicas ?? 1); i++) started.push(await this.startPod(dep));
    }
    await this.waitReady(started, timeoutMs);
    return started;
  }

  /**
   * Stops a pod as kubelet does: out of its Services' endpoints at once, preStop, then SIGTERM;
   * SIGKILL when terminationGracePeriodSeconds (counted from the start) runs out. Resolves with
   * how it ended.
   */
  async terminate(pod) {
    pod.terminating = true;
    pod.ready = false;
    const t0 = Date.now();
    const hook = pod.probes.lifecycle?.preStop?.exec?.command;
    if (hook) {
      await Promise.race([
        podman('exec', pod.container, ...hook).catch((err) => this.log(`${pod.name}: preStop failed: ${err.message}`)),
        sleep(pod.grace * 1000),
      ]);
    }
    const left = Math.max(1, Math.ceil(pod.grace - (Date.now() - t0) / 1000));
    const t1 = Date.now();
    await podman('stop', '-t', String(left), pod.container);
    const exitCode = Number(await podman('inspect', '--format', '{{.State.ExitCode}}', pod.container));
    const logs = exitCode === 0 ? '' : await podman('logs', '--tail', '20', pod.container).catch(() => '');
    await podman('pod', 'rm', '-f', '-t', '0', pod.name);
    this.pods = this.pods.filter((p) => p !== pod);
    return { pod: pod.name, exitCode, preStopMs: t1 - t0, stopMs: Date.now() - t1, logs };
  }

  /**
   * A rolling restart of one Deployment by its strategy: up to maxSurge new pods, and as new
   * ones are ready, old ones terminated, never more than maxUnavailable below the replicas.
   */
  async rollout(name, timeoutMs) {
    const dep = this.deployment(name);
    const replicas = dep.spec.replicas ?? 1;
    const ru = dep.spec.strategy?.rollingUpdate ?? {};
    const surge = count(ru.maxSurge ?? '25%', replicas, true);
    const unavailable = count(ru.maxUnavailable ?? '25%', replicas, false);
    if (surge + unavailable < 1) throw new Error(`${name}: maxSurge and maxUnavailable are both 0`);
    const old = this.pods.filter((p) => p.dep === name);
    // As the controller does: a terminating pod no longer counts, so the next new pod starts
    // while the old one is still stopping.
    const ending = [];
    while (old.length > 0) {
      const batch = Math.min(Math.max(surge, unavailable), old.length);
      const early = old.splice(0, Math.min(unavailable, batch));
      ending.push(...early.map((p) => this.terminate(p)));
      const fresh = [];
      for (let i = 0; i < batch; i++) fresh.push(await this.startPod(dep));
      await this.waitReady(fresh, timeoutMs);
      ending.push(...old.splice(0, batch - early.length).map((p) => this.terminate(p)));
    }
    return Promise.all(ending);
  }

  /** Removes every pod and secret of this run and closes the proxies. */
  async teardown() {
    for (const p of this.pods) p.terminating = true;
    for (const s of this.proxies) s.close();
    const pods = (await podman('pod', 'ls', '-q', '--filter', `label=svc.dev/kube-run=${this.runId}`).catch(() => '')).split('\n').filter(Boolean);
    if (pods.length) await podman('pod', 'rm', '-f', '-t', '0', ...pods).catch((err) => this.log(`removing pods: ${err.message}`));
    for (const s of this.objects.filter((o) => o.kind === 'Secret')) await podman('secret', 'rm', s.metadata.name).catch(() => {});
  }
}

/** One probe: true when it passes within its timeout. */
async function probeOnce(pod, spec) {
  const timeout = (spec.timeoutSeconds ?? 1) * 1000;
  try {
    if (spec.httpGet) {
      const res = await fetch(`http://${pod.ip}:${pod.port(spec.httpGet.port)}${spec.httpGet.path ?? '/'}`, { signal: AbortSignal.timeout(timeout) });
      await res.arrayBuffer();
      return res.status >= 200 && res.status < 400;
    }
    if (spec.tcpSocket) return await tcpOpen(pod.ip, pod.port(spec.tcpSocket.port), timeout);
    if (spec.grpc) return await grpcServing(pod.ip, spec.grpc.port, spec.grpc.service ?? '', timeout);
  } catch {
    return false;
  }
  throw new Error(`${pod.name}: a probe of a kind this stand-in does not run: ${JSON.stringify(spec)}`);
}

function tcpOpen(host, port, timeout) {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeout, () => done(false));
    s.once('connect', () => done(true)).once('error', () => done(false));
  });
}

let grpc;
/** grpc.health.v1.Health/Check, as kubelet's grpc probe: passes when the answer is SERVING (1). */
export async function grpcServing(host, port, service, timeout) {
  grpc ??= (await import('@grpc/grpc-js')).default;
  const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createInsecure());
  try {
    // HealthCheckRequest {service = 1}; HealthCheckResponse {status = 1}: field 1 varint.
    const request = service ? Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(service)]), Buffer.from(service)]) : Buffer.alloc(0);
    const answer = await new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (b) => b,
        (b) => b,
        request,
        { deadline: Date.now() + timeout },
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
    );
    return answer.length >= 2 && answer[0] === 0x08 && answer[1] === 1;
  } finally {
    client.close();
  }
}
