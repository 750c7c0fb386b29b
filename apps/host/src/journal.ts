import fs from 'node:fs';
import path from 'node:path';

/** Who asked for an action: a local client of the endpoint (the relay, a script) or a platform call. */
export interface Caller {
  via: 'local' | 'platform';
  /** For a platform call: its id and the principal that made it (kind and id). */
  callId?: string;
  principal?: { kind: string; id: string };
}

/** One line of the journal. */
export interface JournalEntry {
  seq: number;
  at: string;
  /** `action`: about to be sent to a unit; `result`: what came of it; `refused`: not done (no grant, bad input). */
  kind: 'action' | 'result' | 'refused';
  tool: string;
  unit?: string;
  /** For a project tool: what it acts on (a project path, `venue:<id>`, `host:<id>`). */
  target?: string;
  /** The verb the action needed. */
  verb?: string;
  /** For an action: the exact line sent to the unit (or the step taken: open, close; what a project tool does). */
  line?: string;
  /** For a result: the action's seq. */
  ref?: number;
  ok?: boolean;
  error?: { code: string; message: string };
  caller: Caller;
}

export type NewEntry = Omit<JournalEntry, 'seq' | 'at'>;

/**
 * The host's journal: one JSON line per action, appended and fsync'd before the action reaches the
 * unit, so that what was sent to a machine is on disk even when the host dies mid-action. Appends
 * are serialized (their order is the order of the file).
 */
export class Journal {
  private seq = 0;
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly file: string,
    private readonly fh: fs.promises.FileHandle,
  ) {}

  static async open(file: string): Promise<Journal> {
    await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const fh = await fs.promises.open(file, 'a', 0o600);
    const j = new Journal(file, fh);
    const last = (await readEntries(file)).at(-1);
    j.seq = last?.seq ?? 0;
    return j;
  }

  /** Appends an entry and resolves once it is on disk (written and fsync'd). */
  append(e: NewEntry): Promise<JournalEntry> {
    const run = this.tail.then(async () => {
      const entry: JournalEntry = { seq: this.seq + 1, at: new Date().toISOString(), ...e };
      await this.fh.write(JSON.stringify(entry) + '\n');
      await this.fh.sync();
      this.seq = entry.seq;
      return entry;
    });
    this.tail = run.catch(() => {});
    return run;
  }

  /** Entries after `after` (a seq), oldest first, at most `limit`; or the last `limit` when `after` is not given. */
  async read(opts: { after?: number; limit?: number } = {}): Promise<{ entries: JournalEntry[]; last: number }> {
    await this.tail;
    return readJournal(this.file, opts);
  }

  async close(): Promise<void> {
    await this.tail;
    await this.fh.close();
  }
}

async function readEntries(file: string): Promise<JournalEntry[]> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: JournalEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as JournalEntry);
    } catch {
      // A torn last line (the host died mid-write) is skipped, not fatal.
    }
  }
  return out;
}

/** Reads a journal file (also without a running host: the relay's read-only mode). */
export async function readJournal(file: string, opts: { after?: number; limit?: number } = {}): Promise<{ entries: JournalEntry[]; last: number }> {
  const all = await readEntries(file);
  const limit = Math.min(Math.max(opts.limit ?? 100, 1), 1000);
  const last = all.at(-1)?.seq ?? 0;
  if (opts.after !== undefined) return { entries: all.filter((e) => e.seq > opts.after!).slice(0, limit), last };
  return { entries: all.slice(-limit), last };
}
