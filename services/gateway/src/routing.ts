import { DomainError } from '@svc/kit';

import { checkPathUtf8 } from './http/utf8.js';

/**
 * The route table as a lookup: routes grouped by their first path segment, each path compiled to
 * one regular expression. Express's router walks its layers one by one, with a function call,
 * a path match and a params merge per layer; this finds a request's route with one map lookup
 * and a few regex tests. The matching rules are express's: case-insensitive, an optional
 * trailing slash, HEAD served by a GET route, the first route of the table wins, and path
 * parameters are URI-decoded.
 */
export interface Routable {
  /** Lowercase HTTP method (`get`, `post`, ...). */
  method: string;
  /** Express-style path: literal segments and `:name` parameters (`/agents/:id/keys`). */
  path: string;
}

export type Lookup<T> =
  | { route: T; params: Record<string, string> }
  /** The path exists, but not for this method: the methods it has (for 405 and OPTIONS). */
  | { allowed: string[] }
  /** No route has this path. */
  | undefined;

interface Compiled<T> {
  route: T;
  method: string;
  re: RegExp;
  names: string[];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The group a path belongs to: its first segment, lowercased (matching is case-insensitive). */
const firstSegment = (path: string) => {
  const end = path.indexOf('/', 1);
  return (end < 0 ? path.slice(1) : path.slice(1, end)).toLowerCase();
};

export function compileRoutes<T extends Routable>(routes: T[]): (method: string, path: string) => Lookup<T> {
  const groups = new Map<string, Compiled<T>[]>();
  for (const route of routes) {
    if (!route.path.startsWith('/') || route.path.startsWith('/:')) {
      // Grouping needs a literal first segment; the table has no other kind of path.
      throw new Error(`route path ${route.path}: must start with a literal segment`);
    }
    const names: string[] = [];
    const source = route.path
      .split('/')
      .map((segment) => {
        if (!segment.startsWith(':')) return escape(segment);
        names.push(segment.slice(1));
        return '([^/]+)';
      })
      .join('/');
    const key = firstSegment(route.path);
    const group = groups.get(key) ?? [];
    group.push({ route, method: route.method.toUpperCase(), re: new RegExp(`^${source}/?$`, 'i'), names });
    groups.set(key, group);
  }

  return (method, path) => {
    const group = groups.get(firstSegment(path));
    if (!group) return undefined;
    let allowed: string[] | undefined;
    for (const c of group) {
      const m = c.re.exec(path);
      if (!m) continue;
      if (c.method === method || (method === 'HEAD' && c.method === 'GET')) {
        const params: Record<string, string> = {};
        for (let i = 0; i < c.names.length; i++) params[c.names[i]!] = decodeParam(m[i + 1]!);
        return { route: c.route, params };
      }
      allowed ??= [];
      if (!allowed.includes(c.method)) allowed.push(c.method);
    }
    return allowed && { allowed };
  };
}

function decodeParam(value: string): string {
  // Raw bytes that are not UTF-8 (node hands the URL over one char per byte); percent-encoded
  // ones that are not are refused by decodeURIComponent below.
  if (/[\u0080-\uffff]/.test(value)) checkPathUtf8(value);
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_request', `path: ${JSON.stringify(value)} is not valid percent-encoding.`);
  }
}
