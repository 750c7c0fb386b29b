import { metrics, type ObservableGauge } from '@opentelemetry/api';

/**
 * The platform's own metrics, beside the HTTP and gRPC instrumentations' request metrics
 * (`http.server.request.duration` per route and status): connection pools, outbox lag and
 * consumer lag. Exported over OTLP with the traces when tracing is on (tracing/register.ts);
 * without it the API's no-op meter makes these cost nothing. Values are read when the exporter
 * collects (every `OTEL_METRIC_EXPORT_INTERVAL`), never on a request's path.
 */

interface PoolLike {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options: { max?: number };
  on(event: 'release' | 'remove', fn: () => void): unknown;
  end(): Promise<void>;
}

const pools = new Map<PoolLike, string>();
const outboxes = new Map<object, { schema: string; read: () => Promise<{ pending: number; lagSeconds: number }> }>();
const consumers = new Map<object, { stream: string; consumer: string; read: () => Promise<number> }>();

let gauges: ObservableGauge[] | undefined;

function register(): void {
  if (gauges) return;
  const meter = metrics.getMeter('svc');
  const used = meter.createObservableGauge('db.client.connection.count', {
    description: 'Connections of a PostgreSQL pool, by state (idle, used).',
    unit: '{connection}',
  });
  const pending = meter.createObservableGauge('db.client.connection.pending_requests', {
    description: 'Requests waiting for a connection of a PostgreSQL pool.',
    unit: '{request}',
  });
  const max = meter.createObservableGauge('db.client.connection.max', { description: 'The most connections a pool opens.', unit: '{connection}' });
  used.addCallback((r) => {
    for (const [pool, name] of pools) {
      r.observe(pool.totalCount - pool.idleCount, { 'db.client.connection.pool.name': name, 'db.client.connection.state': 'used' });
      r.observe(pool.idleCount, { 'db.client.connection.pool.name': name, 'db.client.connection.state': 'idle' });
    }
  });
  pending.addCallback((r) => {
    for (const [pool, name] of pools) r.observe(pool.waitingCount, { 'db.client.connection.pool.name': name });
  });
  max.addCallback((r) => {
    for (const [pool, name] of pools) r.observe(pool.options.max ?? 10, { 'db.client.connection.pool.name': name });
  });

  const outboxPending = meter.createObservableGauge('svc.outbox.pending', {
    description: 'Committed events not yet published, per service schema.',
    unit: '{event}',
  });
  const outboxLag = meter.createObservableGauge('svc.outbox.lag', {
    description: 'Age of the oldest committed event not yet published (0 when none waits).',
    unit: 's',
  });
  meter.addBatchObservableCallback(
    async (r) => {
      for (const { schema, read } of outboxes.values()) {
        const v = await read().catch(() => undefined);
        if (!v) continue;
        r.observe(outboxPending, v.pending, { 'svc.schema': schema });
        r.observe(outboxLag, v.lagSeconds, { 'svc.schema': schema });
      }
    },
    [outboxPending, outboxLag],
  );

  const lag = meter.createObservableGauge('svc.consumer.lag', {
    description: 'Events of a stream a durable consumer has not yet handled (pending plus unacknowledged).',
    unit: '{event}',
  });
  lag.addCallback(async (r) => {
    for (const c of consumers.values()) {
      const n = await c.read().catch(() => undefined);
      if (n !== undefined) r.observe(n, { 'messaging.destination.name': c.stream, 'messaging.consumer.group.name': c.consumer });
    }
  });
  gauges = [used, pending, max, outboxPending, outboxLag, lag];
}

/** Reports a pg pool's connections until it ends. */
export function observePool(pool: PoolLike, name: string): void {
  register();
  pools.set(pool, name);
  const end = pool.end.bind(pool);
  pool.end = () => {
    pools.delete(pool);
    return end();
  };
}

/** Reports an outbox's backlog until the returned function is called. */
export function observeOutbox(schema: string, read: () => Promise<{ pending: number; lagSeconds: number }>): () => void {
  register();
  const token = {};
  outboxes.set(token, { schema, read });
  return () => void outboxes.delete(token);
}

/** Reports a durable consumer's lag until the returned function is called. */
export function observeConsumer(stream: string, consumer: string, read: () => Promise<number>): () => void {
  register();
  const token = {};
  consumers.set(token, { stream, consumer, read });
  return () => void consumers.delete(token);
}
