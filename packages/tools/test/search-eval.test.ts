import { routes } from '@svc/api';
import { ToolCatalogue } from '@svc/tools';

import evaluation from './search-eval.json';

/**
 * search_tools held to its evaluation: everyday requests in several phrasings, each with the tool
 * that does it (search-eval.json). The right tool first for at least 80% of them, among the first
 * three for at least 95%.
 */

const catalogue = ToolCatalogue.fromRoutes(routes);
const cases = evaluation.cases as Array<{ query: string; tool: string }>;

test('the evaluation is at least 60 requests, each naming a tool of the catalogue', () => {
  expect(cases.length).toBeGreaterThanOrEqual(60);
  for (const c of cases) expect([c.query, catalogue.get(c.tool)?.name]).toEqual([c.query, c.tool]);
});

test('recall@1 >= 80% and recall@3 >= 95%', () => {
  const rank = cases.map((c) => catalogue.search(c.query, { limit: 3 }).findIndex((t) => t.name === c.tool));
  const at1 = rank.filter((r) => r === 0).length / cases.length;
  const at3 = rank.filter((r) => r >= 0).length / cases.length;
  const misses = cases.filter((_, i) => rank[i] !== 0).map((c) => `${c.query} → ${c.tool}`);
  expect({ at1: at1 >= 0.8, at3: at3 >= 0.95, misses }).toEqual({ at1: true, at3: true, misses: expect.any(Array) });
});

test('"javascript" is one word, and finds run_code', () => {
  expect(catalogue.search('javascript', { limit: 3 }).map((t) => t.name)).toContain('run_code');
  expect(catalogue.search('JavaScript', { limit: 1 })[0]?.name).toBe(catalogue.search('javascript', { limit: 1 })[0]?.name);
});
