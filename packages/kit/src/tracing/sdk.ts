/**
 * The OpenTelemetry SDK with the platform's instrumentations, started by register.ts when tracing
 * is configured (and only then loaded: its modules are a fifth of a start's loading time).
 */
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';

import { redactSecrets } from '../apikey.js';
import { nameSqlSpan } from './sql-spans.js';

export function startTracing(env: NodeJS.ProcessEnv): void {
  if (!env.OTEL_SERVICE_NAME) {
    env.OTEL_SERVICE_NAME = env.SVC_SERVICE && env.SVC_SERVICE !== 'all' ? `svc-${env.SVC_SERVICE}` : 'svc';
  }
  // Metrics go where the traces go (request rate, errors and latency per route; pools, outbox
  // and consumer lag: tracing/metrics.ts), once a minute unless OTEL_METRIC_EXPORT_INTERVAL says.
  env.OTEL_METRICS_EXPORTER ??= env.OTEL_TRACES_EXPORTER === 'none' ? 'none' : 'otlp';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        // Health probes would drown the traces.
        ignoreIncomingRequestHook: (req) => req.url === '/health' || req.url === '/ready',
        // A background call (a probe, a poll) is no trace of its own; calls made for a request
        // are spans of that request's trace.
        requireParentforOutgoingSpans: true,
        // A key pasted into a URL by a careless client must not reach the traces: the URL's
        // attributes are replaced by a redacted copy (keys are only ever read from headers).
        startIncomingSpanHook: (req) => {
          const url = (req as { url?: string }).url ?? '';
          const redacted = redactSecrets(url);
          if (redacted === url) return {};
          const q = redacted.indexOf('?');
          return q < 0 ? { 'url.path': redacted } : { 'url.path': redacted.slice(0, q), 'url.query': redacted.slice(q + 1) };
        },
      }),
      // Middleware layers are anonymous functions: their spans would say nothing. The request's
      // server span carries the route (http.route), and handlers' spans name it.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER] }),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
      // Pollers (the outbox relay, sweepers, probes) query with no request around them: only
      // statements made under a span are traced, named `<OPERATION> <table>` with their text.
      new PgInstrumentation({ requireParentSpan: true, requestHook: (span, info) => nameSqlSpan(span, info.query.text) }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  const stop = () => {
    sdk.shutdown().catch(() => {});
  };
  process.once('beforeExit', stop);
  (globalThis as { __svcTracingShutdown?: () => Promise<void> }).__svcTracingShutdown = () => sdk.shutdown();
}
