/** A unified diff of two line lists (an LCS by dynamic programming, bounded in size). */
import { DomainError } from '@svc/kit';

type Op = { kind: ' ' | '-' | '+'; line: string; a: number; b: number };

export function unifiedDiff(a: string[], b: string[], nameA: string, nameB: string, context: number) {
  // Common head and tail are trimmed first; the table covers what is left.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ma = a.slice(head, a.length - tail);
  const mb = b.slice(head, b.length - tail);
  if ((ma.length + 1) * (mb.length + 1) > 25_000_000) {
    throw new DomainError('too_large', 'diff_too_large', 'The files differ in too many lines to diff here.');
  }
  const w = mb.length + 1;
  // An LCS length is at most min(ma, mb), at most 5,000 under the bound above: 16 bits hold it
  // (the table is 50 MB at the bound, not 100).
  const table = new Uint16Array((ma.length + 1) * w);
  for (let i = ma.length - 1; i >= 0; i--) {
    for (let j = mb.length - 1; j >= 0; j--) {
      table[i * w + j] = ma[i] === mb[j] ? table[(i + 1) * w + j + 1]! + 1 : Math.max(table[(i + 1) * w + j]!, table[i * w + j + 1]!);
    }
  }
  const ops: Op[] = [];
  for (let k = 0; k < head; k++) ops.push({ kind: ' ', line: a[k]!, a: k, b: k });
  let i = 0;
  let j = 0;
  while (i < ma.length || j < mb.length) {
    if (i < ma.length && j < mb.length && ma[i] === mb[j]) {
      ops.push({ kind: ' ', line: ma[i]!, a: head + i, b: head + j });
      i++;
      j++;
    } else if (j < mb.length && (i === ma.length || table[i * w + j + 1]! > table[(i + 1) * w + j]!)) {
      ops.push({ kind: '+', line: mb[j]!, a: head + i, b: head + j });
      j++;
    } else {
      ops.push({ kind: '-', line: ma[i]!, a: head + i, b: head + j });
      i++;
    }
  }
  for (let k = 0; k < tail; k++) ops.push({ kind: ' ', line: a[a.length - tail + k]!, a: a.length - tail + k, b: b.length - tail + k });
  const additions = ops.filter((o) => o.kind === '+').length;
  const deletions = ops.filter((o) => o.kind === '-').length;
  if (!additions && !deletions) return { diff: '', additions: 0, deletions: 0, identical: true };
  // Hunks: changes with `context` lines around them, merged when they touch.
  const out = [`--- ${nameA}`, `+++ ${nameB}`];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k]!.kind === ' ') k++;
    if (k >= ops.length) break;
    let from = Math.max(0, k - context);
    let to = k;
    for (;;) {
      while (to < ops.length && ops[to]!.kind !== ' ') to++;
      let next = to;
      while (next < ops.length && ops[next]!.kind === ' ') next++;
      if (next < ops.length && next - to <= 2 * context) to = next;
      else {
        to = Math.min(ops.length, to + context);
        break;
      }
    }
    const hunk = ops.slice(from, to);
    const aLines = hunk.filter((o) => o.kind !== '+').length;
    const bLines = hunk.filter((o) => o.kind !== '-').length;
    const aStart = aLines ? hunk.find((o) => o.kind !== '+')!.a + 1 : hunk[0]!.a;
    const bStart = bLines ? hunk.find((o) => o.kind !== '-')!.b + 1 : hunk[0]!.b;
    out.push(`@@ -${aStart},${aLines} +${bStart},${bLines} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k = to;
    from = to;
  }
  return { diff: `${out.join('\n')}\n`, additions, deletions, identical: false };
}
