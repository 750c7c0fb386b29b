import type { GrantBook } from './grants.js';
import type { Caller, Journal } from './journal.js';
import type { ProjectTools } from './project/handlers.js';
import { TOOL_BY_NAME, type ToolSpec } from './tools.js';
import { COMMAND_LINE_RE } from './units/driver.js';
import { ControlError, type Units } from './units/units.js';

export { ControlError };

type Args = Record<string, unknown>;

interface PropSchema {
  type: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  enum?: string[];
  items?: PropSchema;
  maxItems?: number;
}

function checkValue(key: string, s: PropSchema, v: unknown): void {
  const bad = (why: string) => new ControlError('invalid_arguments', `${key}: ${why}`, 400);
  switch (s.type) {
    case 'string':
      if (typeof v !== 'string') throw bad('must be a string');
      if (v.length < (s.minLength ?? 0) || v.length > (s.maxLength ?? Infinity))
        throw bad(`must be ${s.minLength ?? 0} to ${s.maxLength} characters`);
      if (s.enum && !s.enum.includes(v)) throw bad(`must be one of ${s.enum.join(', ')}`);
      if (s.pattern && !new RegExp(s.pattern).test(v)) throw bad(`must match ${s.pattern}`);
      return;
    case 'integer':
    case 'number':
      if (s.type === 'integer' ? !Number.isInteger(v) : typeof v !== 'number' || !Number.isFinite(v))
        throw bad(`must be ${s.type === 'integer' ? 'an integer' : 'a number'}`);
      if ((v as number) < (s.minimum ?? -Infinity) || (v as number) > (s.maximum ?? Infinity)) throw bad('is out of range');
      return;
    case 'boolean':
      if (typeof v !== 'boolean') throw bad('must be true or false');
      return;
    case 'object':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('must be a JSON object');
      return;
    case 'array':
      if (!Array.isArray(v)) throw bad('must be an array');
      if (v.length > (s.maxItems ?? Infinity)) throw bad(`has more than ${s.maxItems} items`);
      if (s.items) v.forEach((item, i) => checkValue(`${key}[${i}]`, s.items!, item));
      return;
  }
}

/** Checks arguments against a tool's (flat) input schema: required fields, types, bounds, no extras. */
export function checkArgs(spec: ToolSpec, args: unknown): Args {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new ControlError('invalid_arguments', 'arguments: must be a JSON object', 400);
  }
  const a = args as Args;
  const props = spec.inputSchema.properties as Record<string, PropSchema>;
  for (const key of Object.keys(a)) {
    if (!props[key]) throw new ControlError('invalid_arguments', `${key}: ${spec.name} takes no such argument`, 400);
  }
  for (const key of spec.inputSchema.required ?? []) {
    if (a[key] === undefined) throw new ControlError('invalid_arguments', `${key}: is required`, 400);
  }
  for (const [key, s] of Object.entries(props)) {
    if (a[key] !== undefined) checkValue(key, s, a[key]);
  }
  return a;
}

/**
 * The control tools, served the same way to every caller: the tool's verb must be in a standing
 * grant the host holds, the action is journaled (written and fsync'd) before it is sent to the
 * unit, and its outcome is journaled after.
 */
export class Control {
  constructor(private readonly deps: { units: Units; grants: GrantBook; journal: Journal; project: ProjectTools; commandTimeoutMs?: number }) {}

  /** Refuses unless a held grant gives the tool's verb (on the unit, when the tool names one). */
  private authorize(spec: ToolSpec, unit: string | undefined): void {
    if (spec.verb === null) return;
    const g = this.deps.grants;
    if (!g.loaded()) {
      throw new ControlError(
        'grants_unknown',
        `${spec.name} needs a standing grant, and this host has not yet been able to read its grants from the platform.`,
        503,
      );
    }
    if (spec.verb === 'any') {
      if (!g.find({ any: true }, unit))
        throw new ControlError(
          'grant_required',
          `${spec.name} needs a standing grant (any verb) held by this host${unit ? ` on ${unit}` : ''}; it holds none.`,
          403,
        );
      return;
    }
    if (!g.find(spec.verb, unit)) {
      throw new ControlError(
        'grant_required',
        `${spec.name} needs the verb ${spec.verb} in a standing grant held by this host${unit ? ` (scope account, host:<hostId> or host:<hostId>/${unit})` : ''}; it holds none with it.`,
        403,
      );
    }
  }

  async call(tool: string, rawArgs: unknown, caller: Caller): Promise<unknown> {
    const spec = TOOL_BY_NAME.get(tool);
    if (!spec) throw new ControlError('unknown_tool', `There is no control tool ${JSON.stringify(tool)}.`, 404);
    const { journal } = this.deps;
    let unit: string | undefined;
    try {
      const args = checkArgs(spec, rawArgs ?? {});
      unit = args.unit as string | undefined;
      this.authorize(spec, unit);
      return await this.run(spec, args, caller);
    } catch (err) {
      if (err instanceof ControlError && (err.code === 'grant_required' || err.code === 'grants_unknown' || err.code === 'invalid_arguments')) {
        await journal.append({
          kind: 'refused',
          tool,
          unit,
          verb: spec.verb ?? undefined,
          ok: false,
          error: { code: err.code, message: err.message },
          caller,
        });
      }
      throw err;
    }
  }

  /** Journals an action, then does it, then journals its outcome. */
  private async act<T>(
    spec: ToolSpec,
    unit: string,
    line: string,
    caller: Caller,
    run: () => Promise<T>,
    okOf: (r: T) => boolean = () => true,
  ): Promise<T> {
    const { journal } = this.deps;
    const entry = await journal.append({ kind: 'action', tool: spec.name, unit, verb: spec.verb ?? undefined, line, caller });
    try {
      const out = await run();
      await journal.append({ kind: 'result', tool: spec.name, unit, ref: entry.seq, ok: okOf(out), caller });
      return out;
    } catch (err) {
      const e = err instanceof ControlError ? { code: err.code, message: err.message } : { code: 'failed', message: (err as Error).message };
      await journal.append({ kind: 'result', tool: spec.name, unit, ref: entry.seq, ok: false, error: e, caller });
      throw err;
    }
  }

  private async send(spec: ToolSpec, unit: string, line: string, caller: Caller) {
    const { units, commandTimeoutMs } = this.deps;
    if (!COMMAND_LINE_RE.test(line))
      throw new ControlError('invalid_arguments', 'command: must be one line of printable ASCII (at most 512 characters)', 400);
    units.requireOpen(unit); // unit_not_found / channel_closed: nothing was sent, nothing to journal
    const r = await this.act(
      spec,
      unit,
      line,
      caller,
      () => units.command(unit, line, commandTimeoutMs),
      (r) => r.ok,
    );
    return { unit, ok: r.ok, reply: r.reply };
  }

  private async run(spec: ToolSpec, args: Args, caller: Caller): Promise<unknown> {
    const { units, grants, journal } = this.deps;
    if (spec.group && spec.group !== 'units') return this.deps.project.run(spec, args, caller);
    const unit = args.unit as string;
    switch (spec.name) {
      case 'list_grants':
        return { grants: grants.held() ?? [], loaded: grants.loaded(), credentialRejected: grants.rejected };
      case 'list_units':
        return { units: units.list() };
      case 'open_channel':
        units.driver(unit); // unit_not_found: nothing to journal
        return this.act(spec, unit, 'open', caller, () => units.open(unit));
      case 'arm':
        return this.send(spec, unit, 'ARM', caller);
      case 'run_program':
        return this.send(spec, unit, `RUN ${(args.program as string).replace(/\s+/g, ' ').trim()}`, caller);
      case 'send_command':
        return this.send(spec, unit, args.command as string, caller);
      case 'read_channel':
        return units.read(unit, (args.after as number | undefined) ?? 0, (args.limit as number | undefined) ?? 100);
      case 'stop': {
        units.driver(unit);
        return this.act(
          spec,
          unit,
          'STOP',
          caller,
          async () => {
            const temporary = !units.isOpen(unit);
            if (temporary) await units.open(unit);
            try {
              const r = await units.command(unit, 'STOP', this.deps.commandTimeoutMs);
              return { unit, ok: r.ok, reply: r.reply };
            } finally {
              if (temporary) await units.close(unit);
            }
          },
          (r) => r.ok,
        );
      }
      case 'close_channel':
        units.driver(unit);
        return this.act(spec, unit, 'close', caller, () => units.close(unit));
      case 'read_journal':
        return journal.read({ after: args.after as number | undefined, limit: args.limit as number | undefined });
      default:
        throw new ControlError('unknown_tool', `There is no control tool ${spec.name}.`, 404);
    }
  }
}
