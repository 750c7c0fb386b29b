import { context } from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';

/**
 * Names the route of the incoming HTTP request being handled: the HTTP instrumentation then
 * sets `http.route` on the request's server span and names it `<METHOD> <route>` (a route
 * template, so span names stay few). The gateway finds routes itself (not with express routes,
 * which the express instrumentation would read), so it says which one matched. Without tracing
 * there is no metadata and this does nothing.
 */
export function setHttpRoute(route: string): void {
  const rpc = getRPCMetadata(context.active());
  if (rpc?.type === RPCType.HTTP) rpc.route = route;
}
