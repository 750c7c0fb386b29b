/**
 * receive-pack's answer, read and rewritten before the client hears it: the report-status lines
 * (`unpack ok`, `ok <ref>`, `ng <ref> <reason>`), inside side-band 1 when the client asked for
 * side bands, and progress messages on band 2 (the client prints them as `remote: …`). Only
 * pkt-line framing: the pack itself never passes through here.
 */
import { FLUSH, pkt } from './smart.js';

export interface Report {
  /** Whether the answer used side bands (then messages can be added). */
  sideband: boolean;
  /** The report-status lines, without their newline. */
  lines: string[];
  /** Band 2 messages git sent (progress), kept in order. */
  progress: Buffer[];
}

/** Splits pkt-lines: payloads, and null for a flush (or another special packet). */
function packets(buf: Buffer): Array<Buffer | null> {
  const out: Array<Buffer | null> = [];
  let i = 0;
  while (i + 4 <= buf.length) {
    const len = parseInt(buf.subarray(i, i + 4).toString('ascii'), 16);
    if (!Number.isFinite(len)) break;
    if (len < 4) {
      out.push(null);
      i += 4;
      continue;
    }
    out.push(buf.subarray(i + 4, i + len));
    i += len;
  }
  return out;
}

export function parseReport(out: Buffer): Report {
  const top = packets(out);
  const first = top.find((p): p is Buffer => p !== null);
  const sideband = first !== undefined && first.length > 0 && first[0]! <= 3;
  if (!sideband) return { sideband, lines: lines(top), progress: [] };
  const inner: Buffer[] = [];
  const progress: Buffer[] = [];
  for (const p of top) {
    if (!p || !p.length) continue;
    if (p[0] === 1) inner.push(p.subarray(1));
    else if (p[0] === 2) progress.push(p.subarray(1));
  }
  return { sideband, lines: lines(packets(Buffer.concat(inner))), progress };
}

function lines(ps: Array<Buffer | null>): string[] {
  return ps.filter((p): p is Buffer => p !== null).map((p) => p.toString('utf8').replace(/\n$/, ''));
}

/** The answer again: git's progress, then `messages` (band 2), then the report (band 1), then a flush. */
export function writeReport(r: Report, reportLines: string[], messages: string[]): Buffer {
  const report = Buffer.concat([...reportLines.map((l) => pkt(`${l}\n`)), FLUSH]);
  if (!r.sideband) return report;
  const parts: Buffer[] = [];
  for (const p of r.progress) parts.push(pkt(Buffer.concat([Buffer.from([2]), p])));
  for (const m of messages) parts.push(pkt(Buffer.concat([Buffer.from([2]), Buffer.from(m.endsWith('\n') ? m : `${m}\n`)])));
  for (let i = 0; i < report.length; i += 65515) parts.push(pkt(Buffer.concat([Buffer.from([1]), report.subarray(i, i + 65515)])));
  parts.push(FLUSH);
  return Buffer.concat(parts);
}
