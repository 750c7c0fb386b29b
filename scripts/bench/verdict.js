'use strict';
// The regression guard's verdict (scripts/bench/check.js): plain functions over the paired rounds
// of an interleaved A/B, so that the rule can be tested without a machine's noise.
//
// Each round measured the base (A) and the change (B) seconds apart, so each round gives one ratio
// per metric. The verdict is on the median of those ratios; the noise is their spread, measured in
// the same run: the robust standard deviation (1.4826 × the median absolute deviation) of the
// per-round log ratios, and from it the standard error of their median (× 1.2533 / √n). A metric
// regressed when its median moved the wrong way by more than both `minChange` and `k` standard
// errors, so a quiet machine catches small regressions and a noisy one does not cry wolf.

/** How each metric of a round ({ rps, cpuPerRequestUs }) gets worse: down for throughput, up for CPU. */
const METRICS = {
  cpu: { label: 'CPU per request', worse: (a, b) => Math.log(b.cpuPerRequestUs / a.cpuPerRequestUs) },
  rps: { label: 'throughput', worse: (a, b) => Math.log(a.rps / b.rps) },
};

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * One metric over paired rounds. `worse` holds each round's log ratio, positive when B is worse.
 * Returns the median change (B against A, as a fraction: 0.1 = 10% worse), the noise of one round
 * and of the median (fractions), the threshold the median had to pass, and the verdict:
 * 'regression', 'improvement' (the same rule the other way) or 'same'.
 */
function judgeMetric(worse, { minChange = 0.05, k = 3 } = {}) {
  if (worse.length < 3 || worse.some((x) => !Number.isFinite(x))) throw new Error('judgeMetric: at least 3 finite round ratios');
  const m = median(worse);
  const sigma = 1.4826 * median(worse.map((x) => Math.abs(x - m)));
  const se = (1.2533 * sigma) / Math.sqrt(worse.length);
  const threshold = Math.max(Math.log1p(minChange), k * se);
  const verdict = m > threshold ? 'regression' : m < -threshold ? 'improvement' : 'same';
  return { change: Math.expm1(m), roundNoise: Math.expm1(sigma), noise: Math.expm1(se), threshold: Math.expm1(threshold), verdict };
}

/**
 * An operation's verdict from its rounds ([{ a, b }], each side { rps, cpuPerRequestUs }): each
 * metric's judgement, the per-round changes, and 'regression' when any metric regressed.
 */
function judge(rounds, options = {}) {
  const metrics = {};
  for (const [name, { label, worse }] of Object.entries(METRICS)) {
    const xs = rounds.map(({ a, b }) => worse(a, b));
    metrics[name] = { label, rounds: xs.map(Math.expm1), ...judgeMetric(xs, options) };
  }
  const verdicts = Object.values(metrics).map((x) => x.verdict);
  const verdict = verdicts.includes('regression') ? 'regression' : verdicts.includes('improvement') ? 'improvement' : 'same';
  return { verdict, metrics };
}

module.exports = { judge, judgeMetric, median };
