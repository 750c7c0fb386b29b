/** How the `svc` command writes: tables for people, JSON with --json, progress on stderr, exit codes. */
import { SvcConfigError, SvcError } from '../errors.js';

/** Exit codes (docs/sdk.md). */
export const EXIT = {
  ok: 0,
  /** Another error answer of the API. */
  api: 1,
  /** A command or its arguments were not understood. */
  usage: 2,
  /** Configuration missing: no SVC_API_KEY. */
  config: 3,
  notFound: 4,
  /** 409, 412, 428: a conflict or a precondition that did not hold. */
  conflict: 5,
  /** 401, 403. */
  denied: 6,
  /** No answer, 429 or 5xx (after the retries). */
  unavailable: 7,
} as const;

export class UsageError extends Error {}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof SvcConfigError) return EXIT.config;
  if (err instanceof TypeError && err.message.startsWith('svc:')) return EXIT.usage;
  if (String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) return EXIT.usage;
  if (!(err instanceof SvcError)) return EXIT.api;
  if (err.status === 404) return EXIT.notFound;
  if ([409, 412, 428].includes(err.status)) return EXIT.conflict;
  if (err.status === 401 || err.status === 403) return EXIT.denied;
  if (err.status === 0 || err.status === 429 || err.status >= 500) return EXIT.unavailable;
  return EXIT.api;
}

export interface Out {
  json: boolean;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Progress lines on stderr (off with --quiet). */
  progress: boolean;
}

/** Rows as an aligned table with a header line. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (vs: string[]) =>
    vs
      .map((v, i) => (i === vs.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** Transfers of at least this many bytes show progress. */
export const PROGRESS_BYTES = 1024 * 1024;

/** Counts bytes passing through `source`, reporting on stderr at most every 200 ms and at the end. */
export async function* counted(source: AsyncIterable<Uint8Array>, label: string, total: number | undefined, out: Out): AsyncGenerator<Uint8Array> {
  const show = out.progress && (total === undefined || total >= PROGRESS_BYTES);
  let done = 0;
  let last = 0;
  const report = () => {
    const pct = total ? ` (${Math.floor((done / total) * 100)}%)` : '';
    out.stderr(`${label}: ${bytes(done)}${total ? ` / ${bytes(total)}` : ''}${pct}\n`);
  };
  for await (const chunk of source) {
    done += chunk.length;
    if (show && Date.now() - last >= 200) {
      last = Date.now();
      report();
    }
    yield chunk;
  }
  if (show) report();
}
