import { randomBytes } from 'node:crypto';

import type { UnitDriver, UnitLink } from './driver.js';

/** A failure the control tools report as is: a stable code and a sentence. */
export class ControlError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 409,
  ) {
    super(message);
  }
}

export interface ChannelLine {
  seq: number;
  at: string;
  /** `out`: sent to the unit; `in`: from the unit. */
  dir: 'in' | 'out';
  text: string;
}

interface Channel {
  id: string;
  link: UnitLink;
  open: boolean;
  closedReason?: string;
  lines: ChannelLine[];
  seq: number;
  /** The command awaiting its answer line (commands on a channel go one at a time). */
  pending?: (line: string) => void;
  queue: Promise<unknown>;
  push(dir: ChannelLine['dir'], text: string): void;
}

/** How many lines a channel keeps for read_channel. */
const KEEP_LINES = 1000;

/** The units this host controls, by name, and the channel open to each. */
export class Units {
  private readonly channels = new Map<string, Channel>();

  constructor(private readonly drivers: Map<string, UnitDriver>) {}

  names(): string[] {
    return [...this.drivers.keys()];
  }

  list() {
    return [...this.drivers].map(([name, d]) => {
      const ch = this.channels.get(name);
      return { name, driver: d.kind, ...d.describe(), channel: ch?.open ? { id: ch.id, lines: ch.seq } : null };
    });
  }

  /** The unit's driver; 404 unit_not_found for a name this host does not have. */
  driver(unit: string): UnitDriver {
    const d = this.drivers.get(unit);
    if (!d) throw new ControlError('unit_not_found', `There is no unit named ${JSON.stringify(unit)} on this host.`, 404);
    return d;
  }

  /** The unit's open channel; 409 channel_closed when none is open. */
  private channel(unit: string): Channel {
    this.driver(unit);
    const ch = this.channels.get(unit);
    if (!ch?.open) throw new ControlError('channel_closed', `No channel is open to ${unit}: call open_channel first.`);
    return ch;
  }

  /** Throws unless the unit exists and a channel to it is open. */
  requireOpen(unit: string): void {
    this.channel(unit);
  }

  isOpen(unit: string): boolean {
    return this.channels.get(unit)?.open === true;
  }

  /** Opens a channel to a unit (an open one is kept: opening again is a retry). */
  async open(unit: string): Promise<{ unit: string; channel: string; reused: boolean }> {
    const driver = this.driver(unit);
    const existing = this.channels.get(unit);
    if (existing?.open) return { unit, channel: existing.id, reused: true };
    const ch = {
      id: `ch_${randomBytes(6).toString('hex')}`,
      open: true,
      lines: [],
      seq: 0,
      queue: Promise.resolve(),
      push(dir, text) {
        ch.lines.push({ seq: ++ch.seq, at: new Date().toISOString(), dir, text });
        if (ch.lines.length > KEEP_LINES) ch.lines.splice(0, ch.lines.length - KEEP_LINES);
      },
    } as Omit<Channel, 'link'> as Channel;
    ch.link = await driver
      .connect({
        line: (text) => {
          ch.push('in', text);
          if (ch.pending && /^(OK|ERR)\b/.test(text)) {
            const p = ch.pending;
            ch.pending = undefined;
            p(text);
          }
        },
        closed: (reason) => {
          ch.open = false;
          ch.closedReason = reason;
        },
      })
      .catch((err: Error) => {
        throw new ControlError('unit_unreachable', `The unit ${unit} cannot be reached: ${err.message}`, 502);
      });
    this.channels.set(unit, ch);
    return { unit, channel: ch.id, reused: false };
  }

  /** Sends one command line on the unit's open channel and waits for its answer line (OK … or ERR …). */
  command(unit: string, line: string, timeoutMs = 2000): Promise<{ ok: boolean; reply: string }> {
    const ch = this.channel(unit);
    const run = ch.queue.then(
      () =>
        new Promise<{ ok: boolean; reply: string }>((resolve, reject) => {
          if (!ch.open) return reject(new ControlError('channel_closed', `The channel to ${unit} closed: ${ch.closedReason ?? 'closed'}.`));
          const timer = setTimeout(() => {
            ch.pending = undefined;
            reject(new ControlError('unit_timeout', `${unit} did not answer within ${timeoutMs} ms.`, 504));
          }, timeoutMs);
          ch.pending = (reply) => {
            clearTimeout(timer);
            resolve({ ok: reply.startsWith('OK'), reply });
          };
          ch.push('out', line);
          ch.link.write(line).catch((err: Error) => {
            clearTimeout(timer);
            ch.pending = undefined;
            reject(new ControlError('unit_unreachable', `Sending to ${unit} failed: ${err.message}`, 502));
          });
        }),
    );
    ch.queue = run.catch(() => {});
    return run;
  }

  /** Lines of the unit's channel after `after` (a line seq), oldest first. */
  read(unit: string, after = 0, limit = 100) {
    this.driver(unit);
    const ch = this.channels.get(unit);
    if (!ch) throw new ControlError('channel_closed', `No channel was opened to ${unit}: call open_channel first.`);
    const lines = ch.lines.filter((l) => l.seq > after).slice(0, Math.min(Math.max(limit, 1), KEEP_LINES));
    return { unit, channel: ch.id, open: ch.open, lines, last: ch.seq };
  }

  async close(unit: string): Promise<{ unit: string; closed: boolean }> {
    this.driver(unit);
    const ch = this.channels.get(unit);
    if (!ch?.open) return { unit, closed: false };
    ch.open = false;
    ch.closedReason = 'closed by the host';
    await ch.link.close();
    return { unit, closed: true };
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.names().map((u) => this.close(u).catch(() => {})));
  }
}
