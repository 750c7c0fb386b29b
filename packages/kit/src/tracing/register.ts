/**
 * OpenTelemetry setup, loaded before anything else with `node --require
 * @svc/kit/dist/tracing/register.js`. Configured only by the standard OTEL_* variables; it
 * starts when an OTLP endpoint (or OTEL_TRACES_EXPORTER) is set and stays out of the way
 * otherwise: the SDK (sdk.ts) is not even loaded. Context crosses NATS through message headers
 * (see storage/bus.ts).
 */
import { tracingConfigured } from './enabled.js';
import type * as Sdk from './sdk.js';

const env = process.env;

if (tracingConfigured(env)) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./sdk.js') as typeof Sdk).startTracing(env);
}
