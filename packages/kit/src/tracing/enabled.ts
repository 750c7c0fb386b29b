/** Whether the OTEL_* variables turn tracing on (register.ts starts the SDK then). */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  return (
    env.OTEL_SDK_DISABLED !== 'true' && Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER)
  );
}
