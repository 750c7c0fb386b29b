import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { createDatabase, dropNatsNamespace, REAL, startS3, tempDir } from './support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from './support/process';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

// OTLP/HTTP JSON receiver: what an OpenTelemetry collector would get from the stack.
const spans: Span[] = [];
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
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...(REAL.redis ? { REDIS_URL: REAL.redis } : {}),
    ...(REAL.nats ? { NATS_URL: REAL.nats } : {}),
  });
  base = `http://127.0.0.1:${port}`;
  await waitFor(async () => ((await fetch(`${base}/health`)).ok ? true : undefined), 40_000, 'the stack').catch((err) => {
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  });
}, 60_000);

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
  if (REAL.pg) expect(names.some((n) => n.startsWith('pg.query'))).toBe(true);
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
          const sql = same.find((s) => s.name.startsWith('pg.query') || /^(query|exec)/.test(s.name));
          if (drive && s3Call && (!REAL.pg || sql)) return { g, drive, s3Call };
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
