import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { createDatabase, dropNatsNamespace, REAL, startS3, tempDir } from '../support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

interface MetricPoint {
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}
interface Metric {
  name: string;
  [kind: string]: unknown;
}

// OTLP/HTTP JSON receiver: what an OpenTelemetry collector would get from the stack.
const spans: Span[] = [];
const metrics = new Map<string, MetricPoint[]>();
let rawExports = '';
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    rawExports += body;
    if (req.url === '/v1/traces') {
      const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }> };
      for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
    if (req.url === '/v1/metrics') {
      const doc = JSON.parse(body) as { resourceMetrics: Array<{ scopeMetrics: Array<{ metrics: Metric[] }> }> };
      for (const rm of doc.resourceMetrics)
        for (const sm of rm.scopeMetrics)
          for (const m of sm.metrics) {
            const data = (m.gauge ?? m.sum ?? m.histogram) as { dataPoints?: MetricPoint[] } | undefined;
            metrics.set(m.name, [...(metrics.get(m.name) ?? []), ...(data?.dataPoints ?? [])]);
          }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

const KEY = `svc_${'7e'.repeat(32)}`;
let child: ReturnType<typeof spawnSvc>;
let base: string;
let dropDb: (() => Promise<void>) | undefined;
let namespace = '';
let s3: Awaited<ReturnType<typeof startS3>>;

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const port = await freePort();
  const db = REAL.pg ? await createDatabase(REAL.pg) : undefined;
  dropDb = db?.drop;
  // Drive content goes over the S3 API to s3rver, so its calls show in the trace.
  s3 = await startS3();
  child = spawnSvc({
    S3_ENDPOINT: s3.endpoint,
    S3_ACCESS_KEY: s3.accessKey,
    S3_SECRET_KEY: s3.secretKey,
    S3_BUCKET: `trace${port}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_DATA_DIR: tempDir(),
    SVC_BOOTSTRAP_KEY: KEY,
    SVC_NAMESPACE: (namespace = `tr${port}`),
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...(REAL.redis ? { REDIS_URL: REAL.redis } : {}),
    ...(REAL.nats ? { NATS_URL: REAL.nats } : {}),
  });
  base = `http://127.0.0.1:${port}`;
  await waitFor(async () => ((await fetch(`${base}/health`)).ok ? true : undefined), 120_000, 'the stack').catch((err) => {
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  });
}, 150_000);

afterAll(async () => {
  child?.kill('SIGTERM');
  if (child) expect(await exitCode(child)).toBe(0);
  receiver.close();
  await s3?.stop();
  await dropDb?.();
  if (namespace) await dropNatsNamespace(namespace);
});

const attr = (s: Span, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};
const isSql = (s: Span) => attr(s, 'db.system') === 'postgresql';

test('one request is one trace: gateway span, service span, and the event consumer under one trace id', async () => {
  const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const created = await fetch(`${base}/v1/api/api-keys`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'traced' }) });
  expect(created.status).toBe(201);
  const made = (await created.json()) as { id: string; key: string };
  // A careless client pastes a key into a URL; the span must not carry it.
  expect((await fetch(`${base}/api/api-keys?cursor=${made.key}`, { headers: auth })).status).toBe(400);
  const revoked = await fetch(`${base}/api/api-keys?id=${made.id}`, { method: 'DELETE', headers: auth });
  expect(revoked.status).toBe(200);

  const trace = await waitFor(
    async () => {
      const gatewaySpan = spans.find((s) => (s.kind === 2 && attr(s, 'http.method') === 'DELETE') || (s.kind === 2 && /^DELETE/.test(s.name)));
      if (!gatewaySpan) return undefined;
      const same = spans.filter((s) => s.traceId === gatewaySpan.traceId);
      const grpcServer = same.find((s) => s.kind === 2 && s.name === 'grpc.svc.keys.v1.KeysService/RevokeKey');
      const consumer = same.find((s) => s.kind === 5 && /keys\.key\.revoked process$/.test(s.name));
      return grpcServer && consumer ? { gatewaySpan, same, grpcServer, consumer } : undefined;
    },
    15_000,
    'the spans of the DELETE request',
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; got ${spans.map((s) => `${s.name}/${s.kind}`).join(', ')}`);
  });

  const names = trace.same.map((s) => s.name);
  expect(names).toContain('grpc.svc.keys.v1.KeysService/RevokeKey');
  // The gateway's server span names the route template it matched, not the URL.
  expect(attr(trace.gatewaySpan, 'http.route')).toBe('/api/api-keys');
  expect(trace.gatewaySpan.name).toBe('DELETE /api/api-keys');
  // The gRPC client span in the gateway is the parent of the keys service's server span.
  const client = trace.same.find((s) => s.spanId === trace.grpcServer.parentSpanId);
  expect(client?.kind).toBe(3);
  // SQL spans are named by operation and table (not by a prepared statement's name) and carry the statement.
  if (REAL.pg) expect(trace.same.filter(isSql).map((x) => x.name)).toContain('UPDATE keys.api_keys');
  if (REAL.redis) expect(trace.same.some((s) => (attr(s, 'db.system.name') ?? attr(s, 'db.system')) === 'redis')).toBe(true);

  const careless = await waitFor(
    async () => spans.find((s) => s.kind === 2 && String(attr(s, 'url.query') ?? '').startsWith('cursor=')),
    15_000,
    'the span of the request with a key in its URL',
  );
  expect(attr(careless, 'url.query')).toBe('cursor=svc_[redacted]');

  // Nothing exported to the trace backend carries a key.
  expect(rawExports).not.toContain(made.key.slice(4));
  expect(rawExports).not.toContain(KEY.slice(4));
}, 30_000);

test('a drive upload and download are one trace each: gateway, drive service, SQL and the S3 calls', async () => {
  const auth = { authorization: `Bearer ${KEY}` };
  const body = Buffer.from('traced content '.repeat(100));
  const up = await fetch(`${base}/v1/drive/upload?name=traced.txt`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'text/plain', 'if-none-match': '*' },
    body,
  });
  expect(up.status).toBe(201);
  const item = (await up.json()) as { id: string };
  const down = await fetch(`${base}/v1/drive/${item.id}/content`, { headers: auth });
  expect(down.status).toBe(200);
  expect(Buffer.from(await down.arrayBuffer()).equals(body)).toBe(true);

  const s3Port = new URL(s3.endpoint).port;
  const isS3 = (s: Span) => s.kind === 3 && String(attr(s, 'server.port') ?? attr(s, 'net.peer.port') ?? '') === s3Port;
  for (const method of ['POST', 'GET']) {
    const found = await waitFor(
      async () => {
        const gatewaySpans = spans.filter(
          (s) =>
            s.kind === 2 &&
            (attr(s, 'http.request.method') ?? attr(s, 'http.method')) === method &&
            /drive/.test(String(attr(s, 'url.path') ?? attr(s, 'http.target') ?? attr(s, 'http.route') ?? s.name)),
        );
        for (const g of gatewaySpans) {
          const same = spans.filter((s) => s.traceId === g.traceId);
          const drive = same.find((s) => s.kind === 2 && s.name.startsWith('grpc.svc.drive.v1.DriveService/'));
          const s3Call = same.find(isS3);
          const sql = same.find(isSql);
          if (drive && s3Call && sql) return { g, drive, s3Call };
        }
        return undefined;
      },
      15_000,
      `the spans of the drive ${method}`,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}; got ${spans.map((s) => `${s.name}/${s.kind}`).join(', ')}`);
    });
    expect(found.drive.traceId).toBe(found.g.traceId);
  }
}, 30_000);

const pointAttr = (p: MetricPoint, key: string) => {
  const v = p.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

test('background work makes no traces of its own, every span has a name that says what it is, and metrics reach the collector', async () => {
  const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const from = spans.length;
  expect((await fetch(`${base}/v1/me`, { headers: auth })).status).toBe(200);
  expect((await fetch(`${base}/v1/api/api-keys`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'quiet' }) })).status).toBe(201);
  // Long enough for the outbox relay (every 500 ms), the services' backend probes (every 5 s) and
  // the exporters to have run several times.
  await new Promise((r) => setTimeout(r, 6000));
  const window = spans.slice(from);
  const roots = window.filter((x) => !x.parentSpanId);
  const requestRoots = roots.filter((x) => x.kind === 2 && /^(GET|POST|PUT|PATCH|DELETE) \//.test(x.name));
  const outboxRoots = roots.filter((x) => /^outbox publish [a-z_]+$/.test(x.name));
  // The two requests, and the publication of the key's creation event, linked to its request.
  expect(requestRoots.map((x) => x.name).sort()).toEqual(['GET /me', 'POST /api/api-keys']);
  expect(roots.filter((x) => !requestRoots.includes(x) && !outboxRoots.includes(x)).map((x) => `${x.name}/${x.kind}`)).toEqual([]);
  const created = requestRoots.find((x) => x.name === 'POST /api/api-keys')!;
  expect(outboxRoots.some((x) => x.links?.some((l) => l.traceId === created.traceId))).toBe(true);

  for (const x of spans) {
    expect(x.name).toMatch(/\S/);
    expect(x.name).not.toMatch(/anonymous|^pg\.query/);
  }
  const sql = spans.filter(isSql);
  expect(sql.length).toBeGreaterThan(0);
  for (const x of sql) {
    expect(x.name).toMatch(/^[A-Z]+( [a-z_]+\.[a-z_]+)?$/);
    expect(attr(x, 'db.query.text')).toEqual(expect.any(String));
  }

  // Metrics: request duration per route and status, the outbox's backlog, pools and consumers.
  const requests = await waitFor(
    async () => {
      const points = [...(metrics.get('http.server.request.duration') ?? []), ...(metrics.get('http.server.duration') ?? [])];
      return points.find((p) => pointAttr(p, 'http.route') === '/api/api-keys');
    },
    10_000,
    'a request duration metric of /api/api-keys',
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; got ${[...metrics.keys()].join(', ')}`);
  });
  expect(pointAttr(requests, 'http.route')).toBe('/api/api-keys');
  expect((metrics.get('svc.outbox.lag') ?? []).some((p) => pointAttr(p, 'svc.schema') === 'keys')).toBe(true);
  expect((metrics.get('svc.outbox.pending') ?? []).length).toBeGreaterThan(0);
  if (REAL.pg)
    expect((metrics.get('db.client.connection.count') ?? []).some((p) => pointAttr(p, 'db.client.connection.state') === 'idle')).toBe(true);
  if (REAL.nats)
    expect((metrics.get('svc.consumer.lag') ?? []).some((p) => pointAttr(p, 'messaging.consumer.group.name') === 'keys-verify-cache')).toBe(true);
}, 30_000);

test('the embedded stack (PGlite) traces its SQL too', async () => {
  const port = await freePort();
  const embedded = spawnSvc({
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_DATA_DIR: tempDir(),
    SVC_BOOTSTRAP_KEY: KEY,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRICS_EXPORTER: 'none',
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => ((await fetch(`${url}/health`)).ok ? true : undefined), 120_000, 'the embedded stack');
    const res = await fetch(`${url}/v1/api/api-keys?limit=7`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const sql = await waitFor(
      async () => {
        const g = spans.find((x) => x.kind === 2 && attr(x, 'url.query') === 'limit=7');
        if (!g) return undefined;
        const found = spans.filter((x) => x.traceId === g.traceId && isSql(x));
        return found.length ? found : undefined;
      },
      15_000,
      'the SQL spans of the embedded request',
    );
    expect(sql.map((x) => x.name)).toContain('SELECT keys.api_keys');
  } finally {
    embedded.kill('SIGTERM');
    await exitCode(embedded);
  }
}, 180_000);
