import { context, type Link, propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';

import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import { observeOutbox } from '../tracing/metrics.js';
import { type Bus, currentTraceHeaders, type EventEnvelope } from './bus.js';
import type { Queryable, Sql } from './sql.js';

/**
 * Writes an event in the caller's transaction: it is published only if the change commits,
 * and it is published even if the process dies right after the commit (the relay picks it up).
 */
export async function enqueueEvent<D>(
  q: Queryable,
  schema: string,
  event: { subject: string; accountId: string; data: D; type?: string },
): Promise<EventEnvelope<D>> {
  const envelope: EventEnvelope<D> = {
    id: newId('evt'),
    type: event.type ?? event.subject,
    occurredAt: new Date().toISOString(),
    accountId: event.accountId,
    data: event.data,
  };
  await q.query(`INSERT INTO ${schema}.outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4)`, [
    envelope.id,
    event.subject,
    JSON.stringify(envelope),
    JSON.stringify(currentTraceHeaders()),
  ]);
  return envelope;
}

/**
 * Outbox rows (columns as arrays) for several events, for a caller that writes them with one
 * statement (`INSERT … SELECT * FROM unnest($ids::text[], $subjects::text[], $payloads::jsonb[],
 * $headers::jsonb[])`), possibly inside a larger one. Ids are in the order given. Each event may
 * carry the trace headers of the request it belongs to; the current context's otherwise.
 */
export function eventRows(events: Array<{ subject: string; accountId: string; data: unknown; type?: string; headers?: Record<string, string> }>): {
  ids: string[];
  subjects: string[];
  payloads: string[];
  headers: string[];
} {
  const out = { ids: [] as string[], subjects: [] as string[], payloads: [] as string[], headers: [] as string[] };
  const occurredAt = new Date().toISOString();
  for (const e of events) {
    const id = newId('evt');
    out.ids.push(id);
    out.subjects.push(e.subject);
    out.payloads.push(JSON.stringify({ id, type: e.type ?? e.subject, occurredAt, accountId: e.accountId, data: e.data }));
    out.headers.push(JSON.stringify(e.headers ?? currentTraceHeaders()));
  }
  return out;
}

export interface OutboxRelay {
  /** Publish now (call after a commit that enqueued events). */
  kick(): void;
  stop(): Promise<void>;
}

/**
 * Publishes committed outbox rows in id order (a claimed batch at once, in order on the wire). Rows are claimed with SKIP LOCKED so replicas
 * share the work; a row published twice (crash between publish and mark) is dropped by
 * JetStream's dedupe on the event id, and consumers are idempotent anyway.
 *
 * On the embedded database (one process, one relay per schema, one connection for every
 * service) there is no other replica to share with: the rows are read and then marked, each a
 * statement of its own, with no transaction held while they are published. A transaction would
 * keep the one connection from every tenant's statements for the publish's round trips, and
 * costs two statements and a row lock per pass.
 */
const tracer = trace.getTracer('svc-outbox');

export function startOutboxRelay(deps: { sql: Sql; schema: string; bus: Bus; log: Logger; intervalMs?: number }): OutboxRelay {
  const { sql, schema, bus, log } = deps;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  const shared = sql.kind !== 'pglite';
  // The rows one pass takes at most. On PostgreSQL a pass costs four round trips (BEGIN, the
  // claim, the mark, COMMIT) and a flush of its publishes, whatever its size: under load, bigger
  // passes spend less per event (docs/architecture.md, "Events"). On the embedded database each of
  // its statements holds the one connection every tenant's statements share: they stay short.
  const most = shared ? 500 : 100;
  const pass = async (q: Queryable): Promise<number> => {
    const rows = await q.query<{ id: string; subject: string; payload: unknown; headers: unknown }>(
      `SELECT id, subject, payload, headers FROM ${schema}.outbox
          WHERE published_at IS NULL ORDER BY id LIMIT ${most}${shared ? ' FOR UPDATE SKIP LOCKED' : ''}`,
    );
    if (rows.length === 0) return 0;
    // All at once: they leave in id order on one connection, in one write instead of one each,
    // and their acknowledgements come back together. Rows up to the first failure are marked;
    // the rest are published again later (JetStream drops a repeat of an event id).
    const batch = rows.map((row) => ({
      row,
      payload: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as EventEnvelope,
      headers: (typeof row.headers === 'string' ? JSON.parse(row.headers) : row.headers) as Record<string, string>,
    }));
    // A pass that finds nothing is not traced (the poll would drown the traces); one that
    // publishes is a span linked to the requests whose events it carries, and each event's
    // publish continues its own request's trace.
    const links: Link[] = [];
    for (const b of batch) {
      const linked = trace.getSpanContext(propagation.extract(context.active(), b.headers));
      if (linked) links.push({ context: linked });
    }
    const span = tracer.startSpan(`outbox publish ${schema}`, {
      kind: SpanKind.INTERNAL,
      links,
      attributes: { 'messaging.system': 'nats', 'messaging.batch.message_count': batch.length },
    });
    const sent = await context.with(trace.setSpan(context.active(), span), () =>
      Promise.allSettled(batch.map((b) => bus.publish(b.row.subject, b.payload, b.headers))),
    );
    span.end();
    const done: string[] = [];
    for (const [i, r] of sent.entries()) {
      if (r.status === 'rejected') {
        log.warn({ err: r.reason, subject: rows[i]!.subject }, 'outbox publish failed; will retry');
        break;
      }
      done.push(rows[i]!.id);
    }
    if (done.length) {
      await q.query(`UPDATE ${schema}.outbox SET published_at = now() WHERE id = ANY($1)`, [done]);
    }
    return done.length;
  };
  const drainOnce = (): Promise<number> => (shared ? sql.tx(pass) : pass(sql));

  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    // Outside the context of the request that kicked it: a pass publishes other requests'
    // events too, and its span links to each of them instead.
    running = context.with(ROOT_CONTEXT, async () => {
      try {
        do {
          again = false;
          while ((await drainOnce()) === most);
        } while (again);
      } catch (err) {
        log.warn({ err }, 'outbox relay pass failed');
      } finally {
        running = null;
      }
    });
  };

  const unobserve = observeOutbox(schema, async () => {
    const [r] = await sql.query<{ pending: number; lag: number | null }>(
      `SELECT count(*)::int AS pending, extract(epoch FROM now() - min(created_at))::float8 AS lag
         FROM ${schema}.outbox WHERE published_at IS NULL`,
    );
    return { pending: r?.pending ?? 0, lagSeconds: r?.lag ?? 0 };
  });
  // The poll (for rows no kick announced: another replica's, or a process that died after its
  // commit) first asks whether there is anything at all: one statement where an empty pass is a
  // transaction of three, every interval in each service (on PGlite, its one connection's time).
  const poll = (): void => {
    if (stopped) return;
    if (running) return run();
    sql
      .query<{ pending: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${schema}.outbox WHERE published_at IS NULL) AS pending`)
      .then(([r]) => (r?.pending ? run() : undefined))
      .catch((err: unknown) => {
        if (!stopped) log.warn({ err }, 'outbox poll failed');
      });
  };
  const timer = setInterval(poll, deps.intervalMs ?? 500);
  timer.unref();
  const cleanup = setInterval(() => {
    sql
      .query(`DELETE FROM ${schema}.outbox WHERE published_at < now() - interval '1 day'`)
      .catch((err) => log.warn({ err }, 'outbox cleanup failed'));
  }, 3600_000);
  cleanup.unref();
  run();

  return {
    kick: run,
    async stop() {
      stopped = true;
      unobserve();
      clearInterval(timer);
      clearInterval(cleanup);
      await running;
    },
  };
}

/**
 * Runs a consumer's effect at most once per event: the inbox row and the effect commit
 * together, so a redelivered event is recognised and skipped.
 */
export async function handleOnce(
  sql: Sql,
  schema: string,
  consumer: string,
  event: EventEnvelope,
  effect: (q: Queryable) => Promise<void>,
): Promise<boolean> {
  return sql.tx(async (q) => {
    const inserted = await q.query(`INSERT INTO ${schema}.inbox (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING event_id`, [
      consumer,
      event.id,
    ]);
    if (inserted.length === 0) return false;
    await effect(q);
    return true;
  });
}
