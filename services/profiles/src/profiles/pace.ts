/**
 * Long comparisons in slices: a profile may hold 100,000 items per kind, and comparing or merging
 * two such snapshots is hundreds of milliseconds of CPU on the service's event loop (in the
 * all-in-one process, every tenant's). A pacer is called once per item and gives the event loop
 * back whenever its slice has run SLICE_MS (docs/profiles.md, "Performance"). Never inside a
 * transaction: on the embedded database one holds the connection every tenant's statements wait
 * for, and pacing a merge there made them wait longer.
 */
import { listKey } from './snapshots.js';

/** How long a slice may hold the event loop (ms): 4 left others waiting ~6 times as long as 1. */
const SLICE_MS = 1;
/** How many items between two looks at the clock. */
export const CHECK_EVERY = 128;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Pacer {
  private steps = 0;
  private sliceStart = performance.now();

  /** Once per item: every CHECK_EVERY items, a promise to await if the slice has run its time. */
  step(): Promise<void> | undefined {
    if (++this.steps % CHECK_EVERY !== 0) return undefined;
    if (performance.now() - this.sliceStart < SLICE_MS) return undefined;
    return yieldTurn().then(() => {
      this.sliceStart = performance.now();
    });
  }
}

/** Each item of a list with its key (listKey: items without an id that repeat get an occurrence suffix), in slices. */
export async function keyedPaced(list: unknown[], pace: Pacer): Promise<Array<[string, unknown]>> {
  const out: Array<[string, unknown]> = [];
  const seen = new Map<string, number>();
  for (const item of list) {
    out.push([listKey(item, seen), item]);
    const y = pace.step();
    if (y) await y;
  }
  return out;
}
