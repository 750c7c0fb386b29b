import { type RunResult, Sandbox } from '@svc/quickjs';

import type { Caller, Journal, NewEntry } from '../journal.js';
import type { ToolSpec } from '../tool-spec.js';
import { ControlError } from '../units/units.js';
import { type Mailer, type OUTCOMES, Outreach } from './outreach.js';
import type { PlatformClient } from './platform.js';
import type { Project } from './project.js';
import { runTrials } from './sim.js';
import { Workbench } from './workbench.js';

type Args = Record<string, unknown>;

export interface ProjectToolsDeps {
  /** Where actions are journaled; absent (a relay without the credential): only what reads or shows may run. */
  journal?: Journal;
  /** The project folder this host serves (absent: the project tools answer no_project). */
  project?: Project;
  platform?: PlatformClient;
  /** evaluate_code's sandbox (started on first use when absent). */
  sandbox?: Sandbox;
  /** How outreach mail is sent (SMTP); absent: outreach_send answers smtp_not_configured. */
  mailer?: { send: Mailer; from: string; describe: string };
}

/**
 * The tools beyond units: project, worlds and devices; files and the project graph; code and
 * simulation; markets and other hosts. Grants are checked by Control before a call gets here;
 * everything that changes something is journaled (written and fsync'd) before it is done.
 */
export class ProjectTools {
  private sandbox: Sandbox | undefined;
  private ownSandbox = false;
  private accountId: string | undefined;
  private outreachEngine: Outreach | undefined;
  readonly workbench: Workbench;

  constructor(private readonly d: ProjectToolsDeps) {
    this.sandbox = d.sandbox;
    this.workbench = new Workbench(d.project);
  }

  private project(): Project {
    if (!this.d.project) {
      throw new ControlError(
        'no_project',
        'This host serves no project folder: start it with SVC_HOST_PROJECT (or svc-host --project <folder>).',
        409,
      );
    }
    return this.d.project;
  }

  private journal(): Journal {
    if (!this.d.journal) throw new ControlError('read_only', 'Nothing may act here: there is no journal to record it in.', 403);
    return this.d.journal;
  }

  private outreach(): Outreach {
    this.outreachEngine ??= new Outreach(this.project());
    return this.outreachEngine;
  }

  private platform(): PlatformClient {
    if (!this.d.platform) throw new ControlError('platform_unavailable', 'This host has no connection settings for the platform.', 409);
    return this.d.platform;
  }

  /** Journals an action, does it, journals the result (ok, or the error). */
  private async act<T>(spec: ToolSpec, caller: Caller, what: Omit<NewEntry, 'kind' | 'tool' | 'caller'>, run: () => Promise<T>): Promise<T> {
    const journal = this.journal();
    const entry = await journal.append({ kind: 'action', tool: spec.name, verb: spec.verb ?? undefined, caller, ...what });
    try {
      const out = await run();
      await journal.append({ kind: 'result', tool: spec.name, ref: entry.seq, ok: true, caller, target: what.target });
      return out;
    } catch (err) {
      const e = err instanceof ControlError ? { code: err.code, message: err.message } : { code: 'failed', message: (err as Error).message };
      await journal.append({ kind: 'result', tool: spec.name, ref: entry.seq, ok: false, error: e, caller, target: what.target });
      throw err;
    }
  }

  /**
   * Journals a write that failed: its result when the action was journaled (the write itself
   * failed), else a refusal (a conflict, an invalid document, a path refused). Bad arguments are
   * journaled by Control.
   */
  private async failed(spec: ToolSpec, caller: Caller, target: string, actionSeq: number, err: unknown): Promise<void> {
    const e = err instanceof ControlError ? { code: err.code, message: err.message } : { code: 'failed', message: (err as Error).message };
    if (actionSeq) await this.journal().append({ kind: 'result', tool: spec.name, target, ref: actionSeq, ok: false, error: e, caller });
    else if (e.code !== 'invalid_arguments')
      await this.journal().append({ kind: 'refused', tool: spec.name, target, verb: spec.verb ?? undefined, ok: false, error: e, caller });
  }

  async run(spec: ToolSpec, a: Args, caller: Caller): Promise<unknown> {
    switch (spec.name) {
      case 'get_project':
        return this.project().info();
      case 'project_status':
        return this.project().status();
      case 'list_worlds':
        return { worlds: await this.project().listWorlds() };
      case 'get_world': {
        const w = await this.project().world(a.world as string);
        return { id: w.id, version: w.version, world: w.world };
      }
      case 'save_world': {
        const p = this.project();
        const id = a.world as string;
        // The journal line is written inside the world's lock, after the version check and just
        // before the file is replaced: a conflict is journaled as refused, not as an action.
        let entrySeq = 0;
        try {
          const out = await p.saveWorld(id, a.document, a.version as string | undefined, async (next) => {
            const e = await this.journal().append({
              kind: 'action',
              tool: spec.name,
              verb: spec.verb ?? undefined,
              target: `worlds/${id}.json`,
              line: `save ${a.version ?? 'new'} -> ${next}`,
              caller,
            });
            entrySeq = e.seq;
          });
          await this.journal().append({ kind: 'result', tool: spec.name, target: `worlds/${id}.json`, ref: entrySeq, ok: true, caller });
          return out;
        } catch (err) {
          await this.failed(spec, caller, `worlds/${id}.json`, entrySeq, err);
          throw err;
        }
      }
      case 'list_devices':
        return { devices: [...(await this.project().devices()).values()] };
      case 'get_device':
        return this.project().device(a.device as string);
      case 'read_file':
        return this.project().readFile(a.path as string, (a.encoding as 'utf8' | 'base64' | undefined) ?? 'utf8');
      case 'write_file': {
        const p = this.project();
        let entrySeq = 0;
        try {
          const out = await p.writeFile(
            a.path as string,
            a.content as string,
            (a.encoding as 'utf8' | 'base64' | undefined) ?? 'utf8',
            a.version as string | undefined,
            async (rel) => {
              const e = await this.journal().append({
                kind: 'action',
                tool: spec.name,
                verb: spec.verb ?? undefined,
                target: rel,
                line: `write ${Buffer.byteLength(a.content as string)} chars`,
                caller,
              });
              entrySeq = e.seq;
            },
          );
          await this.journal().append({ kind: 'result', tool: spec.name, target: out.path, ref: entrySeq, ok: true, caller });
          return out;
        } catch (err) {
          await this.failed(spec, caller, String(a.path), entrySeq, err);
          throw err;
        }
      }
      case 'graph_query': {
        const r = await this.project().graph.query({
          path: a.path as string | undefined,
          depth: a.depth as number | undefined,
          kind: a.kind as string | undefined,
          limit: a.limit as number | undefined,
        });
        if (!r) throw new ControlError('not_found', `${String(a.path)} is not a file of the project index.`, 404);
        return r;
      }
      case 'graph_search':
        return this.project().graph.search(a.query as string, (a.limit as number | undefined) ?? 20);
      case 'evaluate_code':
        return this.evaluate(a);
      case 'sim_trials': {
        const p = this.project();
        const w = await p.world(a.world as string);
        const overrides = a.overrides as Record<string, unknown> | undefined;
        for (const [k, v] of Object.entries(overrides ?? {})) {
          if (typeof v !== 'number' || !Number.isFinite(v)) throw new ControlError('invalid_arguments', `overrides.${k}: must be a number`, 400);
        }
        const started = performance.now();
        const out = await runTrials(w.world, await p.devices(), {
          trials: a.trials as number,
          seed: a.seed as number,
          outputs: a.outputs as string[] | undefined,
          overrides: overrides as Record<string, number> | undefined,
          percentiles: a.percentiles as number[] | undefined,
        });
        return { world: w.id, version: w.version, ...out, durationMs: Math.round(performance.now() - started) };
      }
      case 'market_venues':
        return this.platform().call('GET', '/trading/venues');
      case 'market_account':
        return this.platform().call('POST', '/trading/account', { venue: (a.venue as string | undefined) ?? 'paper' });
      case 'market_order': {
        const body = { ...a, venue: (a.venue as string | undefined) ?? 'paper' };
        return this.act(
          spec,
          caller,
          { target: `venue:${body.venue}`, line: `${a.side} ${a.qty} ${a.symbol} ${a.type}${a.price ? ` @ ${a.price}` : ''}` },
          () => this.platform().call('POST', '/trading/order', body),
        );
      }
      case 'market_cancel':
        return this.act(spec, caller, { target: `venue:${(a.venue as string | undefined) ?? 'paper'}`, line: `cancel ${JSON.stringify(a)}` }, () =>
          this.platform().call('POST', '/trading/cancel', a),
        );
      case 'list_hosts':
        return this.platform().call('GET', `/accounts/${await this.account()}/hosts`);
      case 'host_call':
        return this.act(spec, caller, { target: `host:${a.hostId}`, line: `call ${a.tool}` }, () =>
          this.platform().call('POST', `/hosts/${encodeURIComponent(a.hostId as string)}/call`, { tool: a.tool, arguments: a.arguments ?? {} }),
        );
      case 'outreach_apps': {
        const m = this.d.mailer;
        const sequences = [...(await this.outreach().sequences()).values()].map((s) => ({ id: s.id, name: s.name, steps: s.steps.length }));
        return { channels: [{ id: 'email', transport: 'smtp', configured: !!m, from: m?.from ?? null, server: m?.describe ?? null }], sequences };
      }
      case 'outreach_identify':
        return this.outreach().identify(a.email as string, a.name as string | undefined, a.fields as Record<string, string> | undefined);
      case 'outreach_start':
        return { enrollment: await this.outreach().start(a.contact as string, a.sequence as string) };
      case 'outreach_send': {
        const m = this.d.mailer;
        if (!m)
          throw new ControlError(
            'smtp_not_configured',
            'Outreach mail needs an SMTP server: set SVC_HOST_SMTP_URL (smtp://user:pass@host:587) and SVC_HOST_SMTP_FROM.',
            409,
          );
        const target = `outreach:${a.enrollment}`;
        let seq = 0;
        try {
          const out = await this.outreach().send(
            a.enrollment as string,
            m.send,
            async (w) => {
              seq = (
                await this.journal().append({
                  kind: 'action',
                  tool: spec.name,
                  verb: spec.verb ?? undefined,
                  target,
                  line: `mail step ${w.step + 1} to ${w.to}: ${w.subject}`,
                  caller,
                })
              ).seq;
            },
            a.early === true,
          );
          await this.journal().append({ kind: 'result', tool: spec.name, target, ref: seq, ok: true, caller });
          return out;
        } catch (err) {
          await this.failed(spec, caller, target, seq, err);
          throw err;
        }
      }
      case 'outreach_reply':
        return { enrollment: await this.outreach().reply(a.enrollment as string, a.text as string | undefined) };
      case 'outreach_outcome':
        return {
          enrollment: await this.outreach().outcome(a.enrollment as string, a.outcome as (typeof OUTCOMES)[number], a.note as string | undefined),
        };
      case 'outreach_due': {
        const at = a.at !== undefined ? new Date(a.at as string) : undefined;
        if (at && Number.isNaN(at.getTime())) throw new ControlError('invalid_arguments', 'at: must be an ISO time', 400);
        return { due: await this.outreach().due(at) };
      }
      case 'outreach_advance':
        return { enrollment: await this.outreach().advance(a.enrollment as string) };
      case 'outreach_status':
        return this.outreach().status(a.enrollment as string | undefined);
      case 'list_panes':
        // The view's URL carries its token: it is for callers on this machine, never sent to the platform.
        return { panes: this.workbench.list(), ...(caller.via === 'local' ? { url: await this.workbench.url() } : {}) };
      case 'open_file': {
        const f = await this.project().readFile(a.path as string);
        return { pane: this.workbench.open({ kind: 'file', title: f.path, target: f.path }) };
      }
      case 'show_world': {
        const w = await this.project().world(a.world as string);
        return { pane: this.workbench.open({ kind: 'world', title: w.world.name, target: w.id }) };
      }
      case 'thread_read': {
        const q = new URLSearchParams({ after: String(a.after ?? 0), limit: String(a.limit ?? 50) });
        const out = (await this.platform().call('GET', `/threads/${encodeURIComponent(a.thread as string)}/events?${q}`)) as { events: unknown[] };
        const pane = this.workbench.open({ kind: 'thread', title: `thread ${a.thread}`, target: a.thread as string, snapshot: out.events });
        return { ...out, pane: pane.id };
      }
      case 'thread_say':
        return this.act(spec, caller, { target: `thread:${a.thread}`, line: `say ${(a.text as string).slice(0, 200)}` }, () =>
          this.platform().call('POST', `/threads/${encodeURIComponent(a.thread as string)}/inject`, {
            content: a.text,
            ...(a.clientMessageId ? { clientMessageId: a.clientMessageId } : {}),
          }),
        );
      default:
        throw new ControlError('unknown_tool', `There is no control tool ${spec.name}.`, 404);
    }
  }

  /** The account this host belongs to (GET /me with the host credential, which a host may call). */
  private async account(): Promise<string> {
    this.accountId ??= ((await this.platform().callAsHost('GET', '/me')) as { accountId: string }).accountId;
    return this.accountId;
  }

  private async evaluate(a: Args): Promise<unknown> {
    if (!this.sandbox) {
      this.sandbox = new Sandbox({ poolSize: 1, maxQueue: 8 });
      this.ownSandbox = true;
      await this.sandbox.start();
    }
    // The input is a constant declared before the code (JSON is a JavaScript expression).
    const prefix = a.input !== undefined ? `const input = ${JSON.stringify(a.input)};\n` : '';
    let r: RunResult;
    try {
      r = await this.sandbox.run({
        code: prefix + (a.code as string),
        timeoutMs: a.timeoutMs as number | undefined,
        memoryLimitMb: a.memoryLimitMb as number | undefined,
      });
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'sandbox_error';
      throw new ControlError(code === 'sandbox_busy' ? code : 'invalid_arguments', (err as Error).message, code === 'sandbox_busy' ? 503 : 400);
    }
    const shift = (line?: number) => (line !== undefined && prefix ? line - 1 : line);
    return {
      ok: !r.error,
      result: r.resultJson === null ? null : JSON.parse(r.resultJson),
      logs: r.logs,
      logsTruncated: r.logsTruncated,
      error: r.error ? { ...r.error, line: shift(r.error.line) } : null,
      mode: r.mode,
      durationMs: r.durationMs,
      limits: r.limits,
    };
  }

  async close(): Promise<void> {
    await this.workbench.close();
    if (this.ownSandbox) await this.sandbox?.close();
  }
}
