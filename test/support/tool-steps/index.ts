import { STEPS as files } from './files';
import { STEPS as markets } from './markets';
import { STEPS as memory } from './memory';
import type { Step } from './types';
import { STEPS as work } from './work';

/**
 * The steps of each area's tools (test/mcp/mcp-tools.test.ts runs them after its own and before its
 * cleanup): one file per area, each making the fixtures it needs through its own tools.
 */
export const AREA_STEPS: Step[] = [...files, ...markets, ...work, ...memory];
