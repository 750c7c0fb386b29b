import type { HostConfig } from './config.js';
import type { Log } from './log.js';

/** The stdio MCP relay (step 3). */
export async function runRelay(_o: { config: HostConfig; credential?: string; log: Log }): Promise<void> {
  throw new Error('not yet');
}
