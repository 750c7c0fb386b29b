import type { Route } from '@svc/api';

import { errorBodyProblem } from './check';
import { buildGraph, type Graph, type Operation, producerLayers } from './graph';
import { type HttpRequest, type Input, toHttp, validInput } from './input';
import { BODY_MUTATIONS, mutateInput } from './mutate';
import { hashSeed, Rng } from './prng';
import { type HttpAnswer, send } from './send';
import { type Binding, LiveStore } from './store';
import type { Tenant } from './tenants';

/**
 * The stateful fuzzer (docs/reliability.md, "Stateful fuzzing"): phases over the producer/consumer
 * graph (graph.ts) as two tenants, each with its live ids (store.ts). After every phase a canary
 * (GET /v1/me and a small list as each tenant, GET /ready) must answer. Every request's values
 * come from a PRNG seeded with the run's seed, the phase, the operation and the tenant; the
 * bindings of a phase are chosen before it sends anything, so a seed replays the same choices.
 */

export interface StatefulOptions {
  seed: number;
  /** Mutations per operation, tenant and round. */
  mutations: number;
  /** Rounds of the consume/mutate/cross phases (before the deletions). */
  rounds: number;
  concurrency: number;
  timeoutMs?: number;
  /** Operations no request goes to. */
  skip: (r: Route) => boolean;
  log?: (line: string) => void;
}

export interface Problem {
  phase: string;
  operation: string;
  tenant: string;
  status: number;
  message: string;
  request: string;
}

export interface StatefulReport {
  seed: number;
  graph: Graph;
  requests: number;
  /** Operations that succeeded on live ids a producer made (chained), by id. */
  chained: Set<string>;
  failures: Problem[];
  /** 503/504 with the contract's body: allowed, reported. */
  unavailable: Problem[];
  /** Tenant B on tenant A's ids (and the other way): statuses. */
  cross: Record<string, number>;
  /** Deleted ids probed again: statuses. */
  afterDelete: Record<string, number>;
  /** After delete, the operations that answered other than 404 (by status): soft deletes, or a leak to look at. */
  afterDeleteOps: Record<string, string[]>;
  /** 2xx answers whose body does not match the declared schema (counted only). */
  contractMismatches: number;
  canaries: Array<{ phase: string; worstMs: number }>;
  phases: Array<{ name: string; requests: number; ms: number }>;
  ms: number;
}

interface Side {
  tenant: Tenant;
  store: LiveStore;
}

interface Planned {
  op: Operation;
  side: Side;
  /** The key the request goes with (the other tenant's in the cross phase). */
  as: Side;
  binding: Binding;
  input: Input;
  detail: string;
}

const describe = (req: HttpRequest) =>
  `${req.method} ${req.path.slice(0, 240)} ${typeof req.body === 'string' ? req.body.slice(0, 300) : req.body ? `<${req.body.length} bytes>` : ''}`.trim();

export async function runStateful(base: string, routes: Route[], a: Tenant, b: Tenant, opts: StatefulOptions): Promise<StatefulReport> {
  const started = Date.now();
  const graph = buildGraph(routes, opts.skip);
  const sides: Side[] = [a, b].map((tenant) => {
    tenant.pool.protected.add(tenant.accountId);
    return { tenant, store: new LiveStore(tenant.pool) };
  });
  const report: StatefulReport = {
    seed: opts.seed,
    graph,
    requests: 0,
    chained: new Set(),
    failures: [],
    unavailable: [],
    cross: {},
    afterDelete: {},
    afterDeleteOps: {},
    contractMismatches: 0,
    canaries: [],
    phases: [],
    ms: 0,
  };
  const log = opts.log ?? (() => {});

  const sendAs = async (p: Planned, phase: string): Promise<{ a: HttpAnswer; req: HttpRequest }> => {
    const req = toHttp(p.op.route, p.input);
    req.headers = { ...req.headers, authorization: `Bearer ${p.as.tenant.key}` };
    const answer = await send(base, req, opts.timeoutMs ?? 30_000);
    report.requests++;
    const problem = (message: string) => ({
      phase,
      operation: p.op.route.id,
      tenant: p.as === p.side ? p.side.tenant.name : `${p.as.tenant.name} on ${p.side.tenant.name}'s ids`,
      status: answer.status,
      message: `${p.detail ? `${p.detail}: ` : ''}${message}`,
      request: describe(req),
    });
    if (answer.status === 0) report.failures.push(problem(`no answer: ${answer.error}`));
    else if (answer.status >= 500) {
      const allowed = (answer.status === 503 || answer.status === 504) && errorBodyProblem(answer) === null;
      (allowed ? report.unavailable : report.failures).push(problem(answer.text.slice(0, 300)));
    } else if (answer.status < 300 && (p.op.route.answer ?? 'json') === 'json' && /^application\/json/.test(String(answer.headers['content-type']))) {
      try {
        if (!p.op.route.response.safeParse(JSON.parse(answer.text)).success) report.contractMismatches++;
      } catch {
        report.contractMismatches++;
      }
    }
    return { a: answer, req };
  };

  /** Runs planned requests `concurrency` at a time; answers are applied in plan order afterwards. */
  const run = async (phase: string, plan: Planned[], after: (p: Planned, a: HttpAnswer, req: HttpRequest) => void, whole = true) => {
    const t0 = Date.now();
    const answers: Array<{ a: HttpAnswer; req: HttpRequest }> = new Array(plan.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(opts.concurrency, plan.length) }, async () => {
        while (next < plan.length) {
          const i = next++;
          answers[i] = await sendAs(plan[i]!, phase);
        }
      }),
    );
    plan.forEach((p, i) => after(p, answers[i]!.a, answers[i]!.req));
    if (!whole) return;
    report.phases.push({ name: phase, requests: plan.length, ms: Date.now() - t0 });
    log(`${phase}: ${plan.length} requests, ${Date.now() - t0} ms`);
    await canary(phase);
  };

  const canary = async (phase: string) => {
    let worst = 0;
    const checks: Array<[string, string | undefined, (a: HttpAnswer) => boolean]> = [
      ...sides.flatMap((s): Array<[string, string | undefined, (a: HttpAnswer) => boolean]> => [
        ['/v1/me', s.tenant.key, (x) => x.status === 200 && x.text.includes(s.tenant.accountId)],
        ['/v1/agents?limit=2', s.tenant.key, (x) => x.status === 200],
      ]),
      ['/ready', undefined, (x) => x.status === 200 && JSON.parse(x.text).status === 'ready'],
    ];
    const holds = (answer: HttpAnswer, good: (a: HttpAnswer) => boolean) => {
      try {
        return answer.status !== 0 && good(answer);
      } catch {
        return false;
      }
    };
    for (const [path, key, good] of checks) {
      // Within a second: a wedged service never answers; a busy machine answers the next time. The
      // same for /ready: its check of each service has a deadline of its own (1.5 s), which a
      // machine loaded by other work can miss once; a wedged service misses it every time.
      let last: HttpAnswer | undefined;
      for (let attempt = 0; attempt < 3; attempt++) {
        last = await send(base, { method: 'GET', path, headers: key ? { authorization: `Bearer ${key}` } : {} }, 1000);
        if (last.status !== 0 && (path !== '/ready' || holds(last, good))) break;
      }
      worst = Math.max(worst, last!.ms);
      const ok = holds(last!, good);
      if (!ok) {
        report.failures.push({
          phase: `canary after ${phase}`,
          operation: `GET ${path}`,
          tenant: key ? sides.find((s) => s.tenant.key === key)!.tenant.name : '-',
          status: last!.status,
          message: last!.error ?? last!.text.slice(0, 300),
          request: `GET ${path}`,
        });
      }
    }
    report.canaries.push({ phase, worstMs: worst });
  };

  const plan = (phase: string, op: Operation, side: Side, n: number, binding: Binding, as = side): Planned => {
    const rng = new Rng(hashSeed(opts.seed, phase, op.route.id, side.tenant.name, n));
    const { input } = validInput(op.route, rng, side.store.pool);
    input.params = { ...input.params, ...binding.params };
    return { op, side, as, binding, input, detail: '' };
  };
  const bind = (phase: string, op: Operation, side: Side, n: number, deadOnly = false) =>
    side.store.bindFor(op, new Rng(hashSeed(opts.seed, 'bind', phase, op.route.id, side.tenant.name, n)), { deadOnly });

  const ok = (x: HttpAnswer) => x.status >= 200 && x.status < 300;
  const record = (p: Planned, x: HttpAnswer) => {
    if (!ok(x) || p.as !== p.side) return;
    p.side.store.success(p.op, p.binding.values, x.text);
    if (p.binding.live && p.op.slots.length) report.chained.add(p.op.route.id);
  };

  // Phase 1, produce: the producers layer by layer (a comment after its task), twice, so that a
  // producer whose parent only the first pass made runs on it.
  const layers = producerLayers(graph);
  for (let pass = 0; pass < 2; pass++) {
    const phase = `produce ${pass + 1}`;
    const t0 = Date.now();
    let count = 0;
    for (const layer of layers) {
      const planned = layer.flatMap((op) =>
        sides.flatMap((side) => {
          const binding = bind(phase, op, side, 0);
          return binding ? [plan(phase, op, side, 0, binding)] : [];
        }),
      );
      await run(phase, planned, record, false);
      count += planned.length;
    }
    report.phases.push({ name: phase, requests: count, ms: Date.now() - t0 });
    log(`${phase}: ${count} requests, ${Date.now() - t0} ms`);
    await canary(phase);
  }

  // Lists before the children they reveal (a thread's messages before one message).
  const readers = graph.operations.filter((o) => o.role === 'consumer' || o.role === 'root').sort((x, y) => x.slots.length - y.slots.length);
  const writers = graph.operations.filter((o) => o.role !== 'destroyer' && (o.route.body || o.route.query));

  for (let round = 0; round < opts.rounds; round++) {
    // Phase 2, consume: every operation that takes ids, on live ones, with a valid input.
    const consume = (phase: string) =>
      readers.flatMap((op) =>
        sides.flatMap((side) => {
          const binding = bind(phase, op, side, round);
          return binding ? [plan(phase, op, side, round, binding)] : [];
        }),
      );
    const c1 = `consume ${round + 1}`;
    await run(c1, consume(c1), record);

    // Phase 3, mutate: bodies (or queries) of the writers and readers, on live ids.
    const m = `mutate ${round + 1}`;
    const mutations: Planned[] = [];
    for (const op of writers) {
      for (const side of sides) {
        for (let k = 0; k < opts.mutations; k++) {
          const n = round * 1000 + k;
          const binding = bind(m, op, side, n);
          if (!binding) continue;
          const p = plan(m, op, side, n, binding);
          const rng = new Rng(hashSeed(opts.seed, 'mutation', op.route.id, side.tenant.name, n));
          const kind = BODY_MUTATIONS[(k + hashSeed(op.route.id)) % BODY_MUTATIONS.length]!;
          const changed = mutateInput(p.input, kind, rng);
          if (changed) mutations.push({ ...p, input: changed.input, detail: `${kind} ${changed.detail}` });
        }
      }
    }
    await run(m, mutations, record);

    // What the mutations stored is read back.
    const c2 = `reread ${round + 1}`;
    await run(c2, consume(c2), record);

    // Phase 4, cross: each tenant's requests on the other's live ids: 404, never a success.
    const x = `cross ${round + 1}`;
    const cross: Planned[] = [];
    for (const op of graph.operations.filter((o) => o.slots.some((s) => s.prefixes.length))) {
      for (const [owner, intruder] of [
        [sides[0]!, sides[1]!],
        [sides[1]!, sides[0]!],
      ] as const) {
        const binding = bind(x, op, owner, round);
        if (binding?.live) cross.push({ ...plan(x, op, owner, round, binding, intruder), detail: 'the other tenant' });
      }
    }
    await run(x, cross, (p, answer, req) => {
      report.cross[answer.status] = (report.cross[answer.status] ?? 0) + 1;
      if (ok(answer) || (answer.status >= 300 && answer.status < 400) || answer.status === 403) {
        report.failures.push({
          phase: x,
          operation: p.op.route.id,
          tenant: `${p.as.tenant.name} on ${p.side.tenant.name}'s ids`,
          status: answer.status,
          message: `another tenant's resource answered ${answer.status}, not 404: ${answer.text.slice(0, 200)}`,
          request: describe(req),
        });
      }
    });
  }

  // Phase 5, destroy: the operations that remove, children before parents, on live ids.
  const destroyers = graph.operations.filter((o) => o.role === 'destroyer').sort((x, y) => y.slots.length - x.slots.length);
  await run(
    'destroy',
    destroyers.flatMap((op) =>
      sides.flatMap((side) => {
        const binding = bind('destroy', op, side, 0);
        return binding ? [plan('destroy', op, side, 0, binding)] : [];
      }),
    ),
    (p, answer) => {
      if (ok(answer) && p.op.route.method === 'delete' && p.binding.live && p.op.slots.at(-1)?.prefixes.length)
        p.side.store.deleted(p.binding.values);
    },
  );

  // Phase 6, after delete: every operation that takes ids, on the deleted ones.
  const probes = graph.operations
    .filter((o) => o.slots.at(-1)?.prefixes.length)
    .flatMap((op) =>
      sides.flatMap((side) => {
        const binding = bind('after delete', op, side, 0, true);
        return binding ? [plan('after delete', op, side, 0, binding)] : [];
      }),
    );
  await run('after delete', probes, (p, answer) => {
    report.afterDelete[answer.status] = (report.afterDelete[answer.status] ?? 0) + 1;
    if (answer.status !== 404) (report.afterDeleteOps[answer.status] ??= []).push(p.op.route.id);
  });

  report.ms = Date.now() - started;
  return report;
}

/** The report as lines: the phases, the counts, each failure with the seed and the request. */
export function formatStateful(r: StatefulReport): string {
  const lines = [
    `stateful fuzz: seed ${r.seed}, ${r.graph.operations.length} operations, ${r.requests} requests, ${r.chained.size} operations chained on live ids, ${r.failures.length} failing, ${r.unavailable.length} answered 503/504, ${r.contractMismatches} answers off their schema (not checked here), ${r.ms} ms`,
    `  phases: ${r.phases.map((p) => `${p.name} ${p.requests} (${p.ms} ms)`).join(', ')}`,
    `  cross-tenant statuses: ${JSON.stringify(r.cross)}; after delete: ${JSON.stringify(r.afterDelete)}`,
    `  slowest canary: ${Math.max(0, ...r.canaries.map((c) => c.worstMs))} ms`,
    ...Object.entries(r.afterDeleteOps).map(([status, ops]) => `  after delete, ${status}: ${[...new Set(ops)].sort().join(', ')}`),
  ];
  for (const f of r.unavailable) lines.push(`UNAVAILABLE [${f.phase}] ${f.operation} as ${f.tenant}: ${f.status} ${f.message}`);
  for (const f of r.failures) {
    lines.push(`FAIL [${f.phase}] ${f.operation} as ${f.tenant}: ${f.status} ${f.message} (replay: SVC_FUZZ_SEED=${r.seed})`);
    lines.push(`     ${f.request}`);
  }
  return lines.join('\n');
}
