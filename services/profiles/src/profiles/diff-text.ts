/**
 * The diff answer (GET /profiles/:id/diff) as JSON text, computed in slices. A profile may hold
 * 100,000 items per kind: comparing two such snapshots and writing their differences is hundreds
 * of milliseconds of CPU, and on the service's event loop (in the all-in-one process, every
 * tenant's) it held every other request for as long (measured: another account's key listings
 * went from 1 ms to 400–650 ms while one account ran two diffs of 60,000 changed items; docs/profiles.md,
 * "Performance"). Here the work gives the event loop back every millisecond, and the answer is bounded: past
 * DIFF_MAX_BYTES (4 MiB) it stops and answers 413 `diff_too_large`, where a 16 MiB answer used to fail
 * as a 500 between the services after all the work was done.
 *
 * The text is what `JSON.stringify({from, to, ...diffSnapshots(a, b)})` writes (merge.ts), key
 * for key; the tests hold the two to each other.
 */
import { DomainError } from '@svc/kit';

import { items, publicId, scores } from './merge.js';
import { keyedPaced, Pacer } from './pace.js';
import { deepEqual, ITEM_KINDS, type Snapshot } from './snapshots.js';

/**
 * About the most UTF-8 bytes a diff answers with (each piece and its separator counted): the
 * order of the service's other large answers (a version's snapshot, 3 MB of snapshots in a GET,
 * 4 MiB of history per export call), well under the 16 MiB of a message between services. What
 * is left in one piece (the answer's protobuf encoding and decoding, its write) grows with it.
 */
export const DIFF_MAX_BYTES = 4 * 1024 * 1024;

/** Counts the answer's bytes; paces the work (pace.ts). */
class Budget extends Pacer {
  private bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  /** Adds a piece of the answer; refuses once the answer would pass its bound. */
  add(out: string[], piece: string): void {
    // The piece and the comma or bracket after it.
    this.bytes += Buffer.byteLength(piece) + 1;
    if (this.bytes > this.maxBytes) {
      throw new DomainError(
        'too_large',
        'diff_too_large',
        `The difference between these two states is more than ${this.maxBytes} bytes of JSON: ` +
          'compare nearer versions (from and to), or read the versions themselves (GET /profiles/:id/versions/:versionId).',
        { maxBytes: this.maxBytes },
      );
    }
    out.push(piece);
  }
}

const keyedMap = async (list: unknown[], budget: Budget) => new Map(await keyedPaced(list, budget));

/** A JSON array of pieces already written as JSON. */
const array = (pieces: string[]) => `[${pieces.join(',')}]`;

/**
 * The diff of two snapshots, as JSON text: its refs when given (the diff operation's answer;
 * without, a merge's `changes`), then per kind `{added, removed, changed}`,
 * then `latentScores` by key. Throws 413 `diff_too_large` past `maxBytes`.
 */
export async function diffText(
  refs: { from: string | null; to: string | null } | null,
  from: Snapshot,
  to: Snapshot,
  maxBytes = DIFF_MAX_BYTES,
): Promise<string> {
  const budget = new Budget(maxBytes);
  const parts: string[] = [];
  budget.add(parts, refs ? `{"from":${JSON.stringify(refs.from)},"to":${JSON.stringify(refs.to)},` : '{');
  for (const k of ITEM_KINDS) {
    const a = await keyedMap(items(from, k), budget);
    const b = await keyedMap(items(to, k), budget);
    const added: string[] = [];
    const removed: string[] = [];
    const changed: string[] = [];
    for (const [key, item] of b) {
      if (!a.has(key)) budget.add(added, JSON.stringify(item));
      else {
        const old = a.get(key);
        if (!deepEqual(old, item)) budget.add(changed, JSON.stringify({ id: publicId(key, item), from: old, to: item }));
      }
      const y = budget.step();
      if (y) await y;
    }
    for (const [key, item] of a) {
      if (!b.has(key)) budget.add(removed, JSON.stringify(item));
      const y = budget.step();
      if (y) await y;
    }
    parts.push(`${JSON.stringify(k)}:{"added":${array(added)},"removed":${array(removed)},"changed":${array(changed)}},`);
  }
  const a = scores(from);
  const b = scores(to);
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const [key, v] of Object.entries(b)) {
    if (!(key in a)) budget.add(added, `${JSON.stringify(key)}:${JSON.stringify(v)}`);
    else if (!deepEqual(a[key], v)) budget.add(changed, `${JSON.stringify(key)}:${JSON.stringify({ from: a[key], to: v })}`);
    const y = budget.step();
    if (y) await y;
  }
  for (const [key, v] of Object.entries(a)) {
    if (!(key in b)) budget.add(removed, `${JSON.stringify(key)}:${JSON.stringify(v)}`);
    const y = budget.step();
    if (y) await y;
  }
  parts.push(`"latentScores":{"added":{${added.join(',')}},"removed":{${removed.join(',')}},"changed":{${changed.join(',')}}}}`);
  return parts.join('');
}
