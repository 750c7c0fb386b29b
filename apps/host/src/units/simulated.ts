import type { LinkEvents, UnitDriver, UnitLink } from './driver.js';

export type DeviceState = 'idle' | 'armed' | 'running' | 'stopped';

type Step = { op: 'MOVE'; by: number } | { op: 'WAIT'; ms: number } | { op: 'HOME' };

export interface SimulatedOptions {
  /** Model name shown by list_units. */
  model?: string;
  /** Time a MOVE takes per unit of distance (default 2 ms). */
  msPerUnit?: number;
  /** Delay before each answer line (default 0: answered on the next turn of the event loop). */
  latencyMs?: number;
  /** Called with every line the device receives, before it acts on it (tests check the journal here). */
  onReceive?: (line: string) => void;
}

function parseProgram(text: string): Step[] | string {
  const steps: Step[] = [];
  for (const raw of text.split(';')) {
    const words = raw.trim().split(/\s+/).filter(Boolean);
    if (!words.length) continue;
    const [op, arg] = [words[0]!.toUpperCase(), words[1]];
    const n = Number(arg);
    if (op === 'MOVE' && words.length === 2 && Number.isFinite(n) && Math.abs(n) <= 10_000) steps.push({ op, by: n });
    else if (op === 'WAIT' && words.length === 2 && Number.isInteger(n) && n >= 0 && n <= 60_000) steps.push({ op, ms: n });
    else if (op === 'HOME' && words.length === 1) steps.push({ op });
    else return `bad step "${raw.trim()}" (MOVE <distance>, WAIT <ms>, HOME)`;
  }
  if (!steps.length) return 'empty program';
  if (steps.length > 100) return 'a program holds at most 100 steps';
  return steps;
}

/**
 * A device model: a one-axis stage with a position, a state machine (idle → armed → running →
 * idle, STOP from anywhere) and programs whose steps take time. It answers the line protocol of
 * driver.ts, one device per unit, whatever the number of links opened to it over time.
 */
export class SimulatedDevice {
  state: DeviceState = 'idle';
  position = 0;
  speed = 1;
  private program: Step[] = [];
  private step = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly links = new Set<LinkEvents>();

  constructor(readonly options: SimulatedOptions = {}) {}

  attach(events: LinkEvents): () => void {
    this.links.add(events);
    return () => this.links.delete(events);
  }

  private emit(line: string): void {
    const send = () => {
      for (const l of this.links) l.line(line);
    };
    if (this.options.latencyMs) setTimeout(send, this.options.latencyMs).unref();
    else setImmediate(send);
  }

  private status(): string {
    return `state=${this.state} pos=${this.position} step=${this.step}/${this.program.length}`;
  }

  receive(line: string): void {
    this.options.onReceive?.(line);
    const [word = '', ...rest] = line.trim().split(/\s+/);
    const cmd = word.toUpperCase();
    switch (cmd) {
      case 'PING':
        return this.emit('OK PONG');
      case 'STATUS':
        return this.emit(`OK ${this.status()}`);
      case 'ARM':
        if (this.state === 'running') return this.emit('ERR busy: a program is running');
        if (this.state === 'armed') return this.emit('OK ARMED (already)');
        this.state = 'armed';
        return this.emit('OK ARMED');
      case 'RUN': {
        if (this.state !== 'armed') return this.emit(`ERR not armed (state=${this.state})`);
        const program = parseProgram(line.trim().slice(3));
        if (typeof program === 'string') return this.emit(`ERR ${program}`);
        this.program = program;
        this.step = 0;
        this.state = 'running';
        this.emit(`OK RUNNING ${program.length} steps`);
        return this.next();
      }
      case 'STOP': {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        const was = this.state;
        this.state = this.state === 'idle' ? 'idle' : 'stopped';
        return this.emit(`OK STOPPED was=${was} pos=${this.position}`);
      }
      case 'SET':
        if (rest[0]?.toLowerCase() === 'speed' && Number(rest[1]) > 0 && Number(rest[1]) <= 100) {
          this.speed = Number(rest[1]);
          return this.emit(`OK speed=${this.speed}`);
        }
        return this.emit('ERR SET speed <1..100>');
      default:
        return this.emit(`ERR unknown command ${cmd || '(empty)'}`);
    }
  }

  private next(): void {
    const s = this.program[this.step];
    if (!s) {
      this.state = 'idle';
      this.timer = undefined;
      return this.emit(`EVENT done pos=${this.position}`);
    }
    const per = this.options.msPerUnit ?? 2;
    const ms = s.op === 'WAIT' ? s.ms : s.op === 'MOVE' ? (Math.abs(s.by) * per) / this.speed : (Math.abs(this.position) * per) / this.speed;
    this.timer = setTimeout(() => {
      if (s.op === 'MOVE') this.position += s.by;
      if (s.op === 'HOME') this.position = 0;
      this.step++;
      this.emit(`EVENT step ${this.step}/${this.program.length} ${s.op} pos=${this.position}`);
      this.next();
    }, ms);
    this.timer.unref();
  }

  /** Ends any program (the host shutting down). */
  halt(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The simulated driver: links to one SimulatedDevice. */
export class SimulatedDriver implements UnitDriver {
  readonly kind = 'simulated';
  readonly device: SimulatedDevice;

  constructor(options: SimulatedOptions = {}) {
    this.device = new SimulatedDevice(options);
  }

  describe() {
    return { model: this.device.options.model ?? 'sim-stage-1', state: this.device.state, position: this.device.position };
  }

  async connect(events: LinkEvents): Promise<UnitLink> {
    const detach = this.device.attach(events);
    let open = true;
    return {
      write: async (line) => {
        if (!open) throw new Error('link closed');
        this.device.receive(line);
      },
      close: async () => {
        if (!open) return;
        open = false;
        detach();
        events.closed('closed by the host');
      },
    };
  }
}
