'use strict';
// The regression guard's verdict (scripts/bench/check.js): plain functions over the paired rounds
// of an interleaved A/B, so that the rule can be tested without a machine's noise.
//
// Each round measured the base (A) and the change (B), one of them twice around the other (A, B,
// A again or B, A, B again, alternately, so that neither is always measured first or between).
// The round's ratio is the geometric mean of its B's over that of its A's (which cancels a load
// that drifts through the round), and the repeated side's two measurements give an A/A ratio: how
// much two measurements of the same code differ on this machine now. The verdict is on the median
// of the per-round (log) ratios. The noise is measured in the same run: a standard deviation pooled
// over the per-round ratios (around their mean) and the A/A ratios (around none; scaled by √0.75,
// as one measurement is compared with two), and from it the standard error of the median
// (× 1.2533 / √rounds). A metric regressed when its median moved the wrong way by more than both
// `minChange` and `k` standard errors: a quiet machine catches small regressions, a loaded one only
// large ones. The standard deviation, not a robust spread: on a shared machine a few rounds may agree by chance
// while the others scatter, and the guard had better miss a small regression than cry wolf.

/**
 * The metrics of a measurement ({ rps, cpuPerRequestUs, dbCpuPerRequestUs? }) and which way is
 * worse: up for CPU, down for throughput. `db` (PostgreSQL's CPU per request, on real backends) is
 * judged only when every measurement of the operation has it and their median is at least
 * MIN_OPTIONAL_US (below, an operation that sends no SQL sees only the server's background).
 */
const METRICS = {
  cpu: { label: 'CPU per request', of: (m) => m.cpuPerRequestUs, worse: 1 },
  rps: { label: 'throughput', of: (m) => m.rps, worse: -1 },
  db: { label: "PostgreSQL's CPU per request", of: (m) => m.dbCpuPerRequestUs, worse: 1, optional: true },
};

/** An optional metric under this many µs per request is not judged. */
const MIN_OPTIONAL_US = 10;

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * One metric. `worse`: each round's log ratio of B to A, signed so that positive is worse; `aa`: each
 * round's log ratio of the two A's (none without an A2). Returns the noise of one round and of the
 * median, the threshold the median had to pass (all as fractions: 0.1 = 10%) and the verdict:
 * 'regression', 'improvement' (the same rule the other way) or 'same'.
 */
function judgeMetric(worse, aa = [], { minChange = 0.05, k = 3 } = {}) {
  if (worse.length < 3 || [...worse, ...aa].some((x) => !Number.isFinite(x))) throw new Error('judgeMetric: at least 3 finite round ratios');
  const m = median(worse);
  const mean = worse.reduce((x, y) => x + y, 0) / worse.length;
  const squares = worse.reduce((sum, x) => sum + (x - mean) ** 2, 0) + aa.reduce((sum, x) => sum + 0.75 * x * x, 0);
  const sigma = Math.sqrt(squares / (worse.length - 1 + aa.length));
  const se = (1.2533 * sigma) / Math.sqrt(worse.length);
  const threshold = Math.max(Math.log1p(minChange), k * se);
  const verdict = m > threshold ? 'regression' : m < -threshold ? 'improvement' : 'same';
  return { roundNoise: Math.expm1(sigma), noise: Math.expm1(se), threshold: Math.expm1(threshold), verdict };
}

/**
 * An operation's verdict from its rounds ([{ a, b, a2?, b2? }], each a measurement { rps, cpuPerRequestUs }):
 * per metric, B's change against A (median; positive = more CPU or more throughput) and each round's,
 * with the judgement; the operation's verdict is 'regression' when any metric regressed.
 */
function judge(rounds, options = {}) {
  const metrics = {};
  for (const [name, { label, of, worse, optional }] of Object.entries(METRICS)) {
    const values = rounds.flatMap((r) => Object.values(r).filter(Boolean).map(of));
    if (optional && !(values.every((x) => x > 0) && median(values) >= MIN_OPTIONAL_US)) continue;
    const logMean = (...xs) => xs.filter(Boolean).reduce((sum, x, _, all) => sum + Math.log(of(x)) / all.length, 0);
    const ratios = rounds.map(({ a, b, a2, b2 }) => logMean(b, b2) - logMean(a, a2));
    const aa = rounds.filter((r) => r.a2 || r.b2).map(({ a, b, a2, b2 }) => (a2 ? Math.log(of(a2) / of(a)) : Math.log(of(b2) / of(b))));
    metrics[name] = {
      label,
      change: Math.expm1(median(ratios)),
      rounds: ratios.map(Math.expm1),
      aa: aa.map(Math.expm1),
      ...judgeMetric(
        ratios.map((x) => worse * x),
        aa,
        options,
      ),
    };
    // The threshold in the metric's own direction: +10% CPU, or -9.1% throughput.
    metrics[name].limit = worse > 0 ? metrics[name].threshold : 1 / (1 + metrics[name].threshold) - 1;
  }
  const verdicts = Object.values(metrics).map((x) => x.verdict);
  const verdict = verdicts.includes('regression') ? 'regression' : verdicts.includes('improvement') ? 'improvement' : 'same';
  return { verdict, metrics };
}

module.exports = { judge, judgeMetric, median };
