/**
 * The regression guard's verdict (scripts/bench/verdict.js, used by `npm run bench:check`): a
 * change fails only when its median per-round change is worse than both the minimum and the noise
 * the rounds themselves show. Plain numbers in, so no machine's noise decides these.
 */
interface Side {
  rps: number;
  cpuPerRequestUs: number;
  dbCpuPerRequestUs?: number;
}
interface Judged {
  change: number;
  limit: number;
  noise: number;
  roundNoise: number;
  threshold: number;
  verdict: 'regression' | 'improvement' | 'same';
  rounds: number[];
  aa: number[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { judge, judgeMetric } = require('../../scripts/bench/verdict.js') as {
  judge: (
    rounds: Array<{ a: Side; b: Side }>,
    options?: { minChange?: number; k?: number },
  ) => { verdict: string; metrics: Record<'cpu' | 'rps', Judged> & { db?: Judged } };
  judgeMetric: (worse: number[], options?: { minChange?: number; k?: number }) => Omit<Judged, 'rounds'>;
};

/** Rounds whose A is steady and whose B has the given CPU and throughput factors round by round. */
const rounds = (cpu: number[], rps: number[]) =>
  cpu.map((c, i) => ({ a: { rps: 1000, cpuPerRequestUs: 100 }, b: { rps: 1000 * (rps[i] ?? 1), cpuPerRequestUs: 100 * c } }));

describe('bench:check verdict', () => {
  it('passes an A/A whose rounds scatter around no change', () => {
    const v = judge(rounds([1.03, 0.97, 1.01, 0.99, 1.02], [0.98, 1.02, 1.0, 1.03, 0.97]));
    expect(v.verdict).toBe('same');
    expect(Math.abs(v.metrics.cpu.change)).toBeLessThan(0.02);
  });

  it('fails a consistent CPU regression beyond the minimum and the noise, and names the metric', () => {
    const v = judge(rounds([1.4, 1.38, 1.45, 1.41, 1.39], [0.99, 1.01, 1.0, 0.98, 1.02]));
    expect(v.verdict).toBe('regression');
    expect(v.metrics.cpu.verdict).toBe('regression');
    expect(v.metrics.rps.verdict).toBe('same');
    expect(v.metrics.cpu.change).toBeCloseTo(0.4, 5);
    expect(v.metrics.cpu.rounds.map((x) => Number(x.toFixed(2)))).toEqual([0.4, 0.38, 0.45, 0.41, 0.39]);
  });

  it('fails a throughput drop (fewer requests per second is worse)', () => {
    const v = judge(rounds([1, 1, 1, 1, 1], [0.8, 0.82, 0.79, 0.81, 0.8]));
    expect(v.metrics.rps.verdict).toBe('regression');
    expect(v.metrics.rps.change).toBeCloseTo(-0.2, 5);
    // The limit in throughput's own direction: a drop.
    expect(v.metrics.rps.limit).toBeCloseTo(1 / 1.05 - 1, 5);
    expect(v.verdict).toBe('regression');
  });

  it('does not fail a change smaller than the minimum, however quiet the rounds', () => {
    const v = judge(rounds([1.03, 1.03, 1.03, 1.03, 1.03], [1, 1, 1, 1, 1]), { minChange: 0.05 });
    expect(v.metrics.cpu.noise).toBe(0);
    expect(v.metrics.cpu.verdict).toBe('same');
    expect(judge(rounds([1.03, 1.03, 1.03, 1.03, 1.03], [1, 1, 1, 1, 1]), { minChange: 0.02 }).verdict).toBe('regression');
  });

  it('does not fail a median above the minimum when the rounds scatter more than it', () => {
    // Median +10%, but the rounds range from -20% to +40%: within the noise they show.
    const noisy = rounds([0.8, 1.4, 1.1, 0.9, 1.3], [1, 1, 1, 1, 1]);
    const v = judge(noisy);
    expect(v.metrics.cpu.change).toBeCloseTo(0.1, 5);
    expect(v.metrics.cpu.threshold).toBeGreaterThan(0.1);
    expect(v.verdict).toBe('same');
    // The same median with tight rounds fails.
    expect(judge(rounds([1.09, 1.1, 1.1, 1.11, 1.1], [1, 1, 1, 1, 1])).verdict).toBe('regression');
  });

  it('calls a change the other way an improvement, not a regression', () => {
    const v = judge(rounds([0.7, 0.72, 0.69, 0.71, 0.7], [1.3, 1.28, 1.33, 1.3, 1.31]));
    expect(v.verdict).toBe('improvement');
    expect(v.metrics.cpu.verdict).toBe('improvement');
  });

  it('lets one wild round widen the limit, not decide the verdict', () => {
    // One round hit by a burst of other work on the machine: the median ignores it, the noise grows.
    const a = judge(rounds([1.0, 0.99, 3.0, 1.01, 1.0], [1, 1, 0.3, 1, 1]));
    expect(a.verdict).toBe('same');
    expect(a.metrics.cpu.threshold).toBeGreaterThan(0.5);
    // A large regression is still caught beside such a round.
    expect(judge(rounds([3.0, 3.1, 0.9, 2.9, 3.05], [1, 1, 1, 1, 1])).verdict).toBe('regression');
  });

  it('takes the noise an A/A shows into account: B against both As of a round, the As against each other', () => {
    // B 15% over A every round; the two A's of each round agree within 1%: a regression.
    const quiet = [1, 1.01, 0.99, 1, 1.01].map((x) => ({
      a: { rps: 1000, cpuPerRequestUs: 100 },
      b: { rps: 1000, cpuPerRequestUs: 115 },
      a2: { rps: 1000, cpuPerRequestUs: 100 * x },
    }));
    const q = judge(quiet);
    expect(q.metrics.cpu.verdict).toBe('regression');
    expect(q.metrics.cpu.aa.map((x) => Number(x.toFixed(2)))).toEqual([0, 0.01, -0.01, 0, 0.01]);
    // B compared with the geometric mean of A and A2: 115 against √(100 × 121) = 110.
    expect(
      judge([1, 1, 1].map(() => ({ a: { rps: 1, cpuPerRequestUs: 100 }, b: { rps: 1, cpuPerRequestUs: 115 }, a2: { rps: 1, cpuPerRequestUs: 121 } })))
        .metrics.cpu.change,
    ).toBeCloseTo(115 / 110 - 1, 6);
    // A round of B, A, B again: A against the two B's, the B's against each other.
    const bab = judge(
      [1, 1, 1].map(() => ({ a: { rps: 1, cpuPerRequestUs: 100 }, b: { rps: 1, cpuPerRequestUs: 100 }, b2: { rps: 1, cpuPerRequestUs: 144 } })),
    );
    expect(bab.metrics.cpu.change).toBeCloseTo(0.2, 6);
    expect(bab.metrics.cpu.aa.map((x) => Number(x.toFixed(2)))).toEqual([0.44, 0.44, 0.44]);
    // The same B, but the two A's of a round differ by 30–50% (a loaded machine): within the noise.
    const loud = [1.3, 0.7, 1.5, 0.65, 1.4].map((x) => ({
      a: { rps: 1000, cpuPerRequestUs: 100 },
      b: { rps: 1000, cpuPerRequestUs: 115 * Math.sqrt(x) },
      a2: { rps: 1000, cpuPerRequestUs: 100 * x },
    }));
    const l = judge(loud);
    expect(l.metrics.cpu.change).toBeCloseTo(0.15, 5);
    expect(l.metrics.cpu.threshold).toBeGreaterThan(0.15);
    expect(l.verdict).toBe('same');
  });

  it("judges PostgreSQL's CPU per request where the operation spends some there: work moved into SQL fails", () => {
    // The stack's own CPU and throughput unchanged; the database's CPU per request up 40% (a slower statement).
    const withDb = (db: number[], base = 300) =>
      db.map((d) => ({
        a: { rps: 1000, cpuPerRequestUs: 100, dbCpuPerRequestUs: base },
        b: { rps: 1000, cpuPerRequestUs: 100, dbCpuPerRequestUs: base * d },
      }));
    const slower = judge(withDb([1.4, 1.38, 1.42, 1.41, 1.39]));
    expect(slower.metrics.db?.verdict).toBe('regression');
    expect(slower.metrics.cpu.verdict).toBe('same');
    expect(slower.verdict).toBe('regression');
    // Moved the other way: an improvement.
    expect(judge(withDb([0.6, 0.62, 0.61, 0.6, 0.63])).metrics.db?.verdict).toBe('improvement');
    // An operation that sends no SQL sees only the server's background (under 10 µs a request): not judged.
    const idle = judge(withDb([3, 3, 3, 3, 3], 2));
    expect(idle.metrics.db).toBeUndefined();
    expect(idle.verdict).toBe('same');
    // Embedded backends (no figure) or a round without one: not judged.
    expect(judge(rounds([1, 1, 1], [1, 1, 1])).metrics.db).toBeUndefined();
    const partial = withDb([1.4, 1.4, 1.4]);
    delete partial[1]!.b.dbCpuPerRequestUs;
    expect(judge(partial).metrics.db).toBeUndefined();
  });

  it('refuses too few rounds or ratios that are not numbers', () => {
    expect(() => judgeMetric([0.1, 0.2])).toThrow(/at least 3/);
    expect(() => judgeMetric([0.1, NaN, 0.2])).toThrow(/finite/);
  });
});
