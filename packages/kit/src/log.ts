import { trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs on stdout. Every line carries the active trace and span ids, so a log line leads
 * to its trace. Credentials are redacted wherever they might appear.
 */
export function createLogger(options: { level?: string; service: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          'authorization',
          'headers.authorization',
          'req.headers.authorization',
          '*.authorization',
          'key',
          'plaintext',
          '*.plaintext',
          'password',
          // A failed statement's error carries its parameters (key hashes, names, ...).
          'err.params',
          'err.parameters',
          'err.cause.params',
        ],
        censor: '[redacted]',
      },
      mixin() {
        const span = trace.getActiveSpan();
        if (!span) return {};
        const { traceId, spanId } = span.spanContext();
        return { traceId, spanId };
      },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}
