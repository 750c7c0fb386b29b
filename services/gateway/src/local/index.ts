import type { Logger, Registry } from '@svc/kit';

import type { LocalHandler } from '../app.js';

export interface LocalDeps {
  log: Logger;
  registry: Registry;
}

/**
 * Gateway-side handlers for routes declared with `handler: {kind: 'local', name}` that need more
 * than one unary gRPC call (streamed bodies, protocol fronts). Each module adds its own here.
 */
export function localHandlers(_deps: LocalDeps): Record<string, LocalHandler> {
  return {};
}
