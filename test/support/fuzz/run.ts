import type { Route } from '@svc/api';

import type { TestStack } from '../stack';
import { type Case, makeCase, type Pools, type Principal } from './cases';
import { checkAnswer, type Failure, type Secrets } from './check';
import type { Input } from './input';
import { type HttpAnswer, send } from './send';
import { destructive, type Tenant } from './tenants';

export interface FuzzOptions {
  seed: number;
  /** Cases per operation in each round (the first two: the valid case, the other tenant's ids). */
  cases: number;
  /** Keep going round after round until this many ms have passed (default: one round). */
  durationMs?: number;
  /** Only these operation ids (default: every operation of `routes`). */
  only?: string[];
  concurrency?: number;
  timeoutMs?: number;
  /** Told of each case's outcome (the long run's progress). */
  onCase?: (c: Case, a: HttpAnswer, failures: Failure[]) => void;
}

export interface CaseFailure {
  operation: string;
  n: number;
  /** The case's own seed, and the run seed (plus the round) that makes it again. */
  seed: number;
  runSeed: number;
  kind: string;
  detail: string;
  principal: Principal;
  request: string;
  status: number;
  failures: Failure[];
}

export interface OperationSummary {
  operation: string;
  cases: number;
  /** Answers by status class (`2xx`, `4xx`, ...; `none` when there was no answer). */
  statuses: Record<string, number>;
  failures: number;
  /** The valid case answered 2xx in some round. */
  validSucceeded: boolean;
  /** The valid case's last answer: status and error code. */
  validAnswer: string;
  /** The slowest answer, ms, and its case. */
  slowestMs: number;
  slowestCase: string;
}

export interface FuzzReport {
  seed: number;
  rounds: number;
  cases: number;
  operations: OperationSummary[];
  failures: CaseFailure[];
  /** Cases and the time their answers took, by kind. */
  kinds: Record<string, { cases: number; ms: number }>;
  /** 503/504 answers with the contract's body: allowed, but reported (an overloaded or absent backend). */
  unavailable: CaseFailure[];
  ms: number;
}

/** Operations no case is sent to, each with the reason (the run reports them; none is skipped silently). */
export interface Exclusion {
  operation: string;
  reason: string;
}

/**
 * Fuzzes every operation of `routes` through the gateway as tenant `own`, with `other`'s ids as
 * the hostile ones: operations that remove things last, the rest `concurrency` at a time.
 */
export async function fuzz(t: TestStack, routes: Route[], own: Tenant, other: Tenant, opts: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const pools: Pools = { own: own.pool, other: other.pool, otherAccountId: other.accountId };
  const secrets: Secrets = { ids: () => other.pool.everything(), strings: other.secrets };

  const selected = routes.filter((r) => !opts.only || opts.only.includes(r.id));
  const summaries = new Map<string, OperationSummary>(
    selected.map((r) => [
      r.id,
      { operation: r.id, cases: 0, statuses: {}, failures: 0, validSucceeded: false, validAnswer: '', slowestMs: 0, slowestCase: '' },
    ]),
  );
  const failures: CaseFailure[] = [];
  const unavailable: CaseFailure[] = [];
  const auth = (p: Principal): Record<string, string> => {
    switch (p) {
      case 'human':
        return { authorization: `Bearer ${own.key}` };
      case 'agent':
        return { authorization: `Bearer ${own.agentKey}` };
      case 'garbage':
        return { authorization: 'Bearer svc_not_a_real_key_0000000000000000' };
      case 'basic':
        return { authorization: `Basic ${Buffer.from(`x:${own.key}`).toString('base64')}` };
      case 'other':
        return { authorization: `Bearer ${other.key}`, 'x-svc-account': own.accountId };
      case 'none':
        return {};
    }
  };

  /** Per operation, the last input its valid case succeeded with. */
  const accepted = new Map<string, Input>();
  const byKind = new Map<string, { cases: number; ms: number }>();
  const runCase = async (r: Route, n: number, round: number) => {
    const c = makeCase(r, n, opts.seed + round, pools, accepted.get(r.id));
    const req = { ...c.request, headers: { ...c.request.headers, ...auth(c.principal) } };
    // Every credential but the person's comes from another loopback address: the gateway's limit on
    // failed authentications counts per address (30 a minute), and made-up keys (or the agent's,
    // once a long run has revoked it) would otherwise have every later case refused with a 429.
    const from = c.principal === 'human' ? undefined : '127.0.0.2';

    const a = await send(t.url, req, opts.timeoutMs ?? 60_000, from);

    const found = checkAnswer(c, a, secrets);
    const k = byKind.get(c.kind) ?? { cases: 0, ms: 0 };
    byKind.set(c.kind, { cases: k.cases + 1, ms: k.ms + a.ms });
    if (a.status >= 200 && a.status < 300 && !c.otherTenant) {
      own.pool.harvest(a.text);
      for (const id of secrets.ids()) own.pool.forget(id);
    }
    const s = summaries.get(r.id)!;
    s.cases++;
    const cls = a.status ? `${Math.floor(a.status / 100)}xx` : 'none';
    s.statuses[cls] = (s.statuses[cls] ?? 0) + 1;
    if (a.ms > s.slowestMs) {
      s.slowestMs = a.ms;
      s.slowestCase = `case ${n} ${c.kind}: ${c.detail.slice(0, 60)}`;
    }
    if (n === 0) {
      if (a.status >= 200 && a.status < 300) {
        s.validSucceeded = true;
        accepted.set(r.id, c.input);
      }
      s.validAnswer = `${a.status}${a.status >= 400 ? ` ${/"code":"([a-z_]+)"/.exec(a.text)?.[1] ?? ''}` : ''}${c.valid ? '' : ' (schemas refine)'}`;
    }
    const record = (into: CaseFailure[], what: Failure[]) =>
      into.push({
        operation: r.id,
        n,
        seed: c.seed,
        runSeed: opts.seed + round,
        kind: c.kind,
        detail: c.detail,
        principal: c.principal,
        request: `${req.method} ${req.path.slice(0, 200)} ${typeof req.body === 'string' ? req.body.slice(0, 200) : req.body ? `<${req.body.length} bytes>` : ''}`,
        status: a.status,
        failures: what,
      });
    if (found.length) {
      s.failures++;
      record(failures, found);
    } else if (a.status === 503 || a.status === 504) record(unavailable, [{ kind: 'server-error', message: a.text.slice(0, 300) }]);
    opts.onCase?.(c, a, found);
  };

  const pool = async (jobs: Array<() => Promise<void>>, width: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(width, jobs.length) }, async () => {
        while (next < jobs.length) await jobs[next++]!();
      }),
    );
  };

  const gentle = selected.filter((r) => !destructive(r));
  const last = selected.filter((r) => destructive(r));
  let round = 0;
  do {
    // Per operation, its cases in order (the valid one first); operations side by side.
    const perRoute = (r: Route) => async () => {
      for (let n = 0; n < opts.cases; n++) await runCase(r, n, round);
    };
    await pool(gentle.map(perRoute), opts.concurrency ?? 4);
    await pool(last.map(perRoute), opts.concurrency ?? 4);
    round++;
  } while (opts.durationMs !== undefined && Date.now() - started < opts.durationMs);

  const operations = [...summaries.values()];
  return {
    seed: opts.seed,
    rounds: round,
    cases: operations.reduce((n, s) => n + s.cases, 0),
    operations,
    failures,
    unavailable,
    kinds: Object.fromEntries(byKind),
    ms: Date.now() - started,
  };
}

/** The report as lines: one per operation, then each failing case with what replays it. */
export function formatReport(report: FuzzReport): string {
  const lines = [
    `fuzz: seed ${report.seed}, ${report.rounds} round(s), ${report.operations.length} operations, ${report.cases} cases, ${report.failures.length} failing, ${report.unavailable.length} answered 503/504, ${report.ms} ms`,
  ];
  const kinds = Object.entries(report.kinds ?? {}).map(([k, v]) => `${k} ${v.cases} (${v.ms} ms)`);
  if (kinds.length) lines.push(`  by kind: ${kinds.join(', ')}`);
  for (const s of report.operations) {
    const statuses = Object.entries(s.statuses)
      .sort()
      .map(([k, v]) => `${k}:${v}`)
      .join(' ');
    lines.push(
      `  ${s.operation.padEnd(32)} ${String(s.cases).padStart(5)} cases  ${statuses.padEnd(28)} ${s.failures ? `${s.failures} FAILING` : 'ok'}  valid: ${s.validAnswer}  slowest ${s.slowestMs} ms${s.slowestMs > 1000 ? ` (${s.slowestCase})` : ''}`,
    );
  }
  for (const f of report.unavailable)
    lines.push(`UNAVAILABLE ${f.operation} case ${f.n} (${f.kind}: ${f.detail}): ${f.status} ${f.failures[0]?.message}`);
  for (const f of report.failures) {
    lines.push(
      `FAIL ${f.operation} case ${f.n} ${f.kind}: ${f.detail} [as ${f.principal}] (replay: FUZZ_SEED=${f.runSeed} FUZZ_ONLY=${f.operation} FUZZ_CASES=${f.n + 1})`,
    );
    lines.push(`     ${f.request}`);
    for (const x of f.failures) lines.push(`     -> ${x.kind}: ${x.message}`);
  }
  return lines.join('\n');
}
