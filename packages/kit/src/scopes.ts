/**
 * Scopes are structured values, never paths: `account`, or `<kind>:<id>` with a kind of
 * {@link SCOPE_KINDS} and an id of the scope-id grammar (a key's project id has the same one).
 * The rules are plain functions: the route table's schemas and the services call them.
 */

/** The kinds a `<kind>:<id>` scope may name. */
export const SCOPE_KINDS = ['project', 'host'] as const;

const SCOPE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

/** Why `id` is not a scope id (a project's, a host's), or null when it is one. */
export function scopeIdProblem(id: string): string | null {
  if (!SCOPE_ID.test(id))
    return 'must be 1–100 letters, digits and _ . : - (starting with a letter or digit), with no "/", spaces or control characters';
  if (id.includes('..')) return 'must not hold ".."';
  return null;
}

/**
 * Why `scope` is not a scope, or null when it is one: `account`, `project:<id>`, `host:<id>`, or
 * `host:<id>/<unit>` (one unit of a host, docs/host.md), every id and unit name of the id grammar,
 * so never empty, `.`, `..` or holding a `/`, space or control character: a structured value, not a
 * path to resolve.
 */
export function scopeProblem(scope: string): string | null {
  if (scope === 'account') return null;
  const colon = scope.indexOf(':');
  const kind = colon < 0 ? '' : scope.slice(0, colon);
  if (!(SCOPE_KINDS as readonly string[]).includes(kind)) return 'must be "account", "project:<id>", "host:<id>" or "host:<id>/<unit>"';
  const [id, ...below] = scope.slice(colon + 1).split('/');
  const problem = scopeIdProblem(id!);
  if (problem) return `the id after "${kind}:" ${problem}`;
  if (below.length === 0) return null;
  if (kind !== 'host' || below.length > 1) return 'may name one unit below a host ("host:<id>/<unit>") and nothing below a project';
  const unit = scopeIdProblem(below[0]!);
  return unit ? `the unit after "host:${id}/" ${unit}` : null;
}
