/** The If header (RFC 4918 10.4): parsing, and evaluating a list against a resource's state. */
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

export interface IfCondition {
  not: boolean;
  token?: string;
  etag?: string;
}
export interface IfList {
  /** The resource a tagged list applies to (a path), or undefined for the request URI. */
  resource?: string;
  conditions: IfCondition[];
}

export function parseIfHeader(v: string): IfList[] {
  const lists: IfList[] = [];
  let i = 0;
  let resource: string | undefined;
  const bad = () => new DomainError('invalid_argument', 'invalid_if_header', 'The If header is malformed.');
  // Lenient at the very end: some clients (litmus 0.13) cut long If headers short; what is there
  // is still evaluated, an unterminated last condition simply never matches.
  const until = (close: string, from: number) => {
    const e = v.indexOf(close, from);
    return e < 0 ? v.length : e;
  };
  const ws = () => {
    while (i < v.length && /\s/.test(v[i]!)) i++;
  };
  ws();
  while (i < v.length) {
    if (v[i] === '<') {
      const e = v.indexOf('>', i);
      if (e < 0) throw bad();
      resource = v.slice(i + 1, e);
      i = e + 1;
      ws();
      if (v[i] !== '(') throw bad();
      continue;
    }
    if (v[i] !== '(') throw bad();
    i++;
    const conditions: IfCondition[] = [];
    for (;;) {
      ws();
      if (v[i] === ')' || i >= v.length) {
        i++;
        break;
      }
      let not = false;
      if (/^not\b/i.test(v.slice(i, i + 4))) {
        not = true;
        i += 3;
        ws();
      }
      if (v[i] === '<') {
        const e = until('>', i);
        conditions.push({ not, token: v.slice(i + 1, e) });
        i = e + 1;
      } else if (v[i] === '[') {
        const e = until(']', i);
        conditions.push({ not, etag: v.slice(i + 1, e).trim() });
        i = e + 1;
      } else {
        throw bad();
      }
    }
    if (!conditions.length) throw bad();
    lists.push({ resource, conditions });
    ws();
  }
  if (!lists.length) throw bad();
  return lists;
}

/** The state of a resource an If list is checked against. */
export interface IfState {
  etag: string | null;
  /** Tokens of the locks covering the resource. */
  tokens: string[];
}

export function listPasses(list: IfList, s: IfState): boolean {
  return list.conditions.every((c) => {
    const hit = c.token !== undefined ? s.tokens.includes(c.token) : s.etag !== null && c.etag === s.etag && !s.etag.startsWith('W/');
    return c.not ? !hit : hit;
  });
}

/** Lock tokens an If header names (the tokens a client submits). */
export function submittedTokens(lists: IfList[]): string[] {
  return [...new Set(lists.flatMap((l) => l.conditions.filter((c) => c.token && !c.not).map((c) => c.token!)))];
}

/** The If state of an item, or of a missing one (only locks inherited from its folder). */
export function stateOf(item: drive.Item | undefined, parent?: drive.Item): IfState {
  if (item) return { etag: item.etag, tokens: item.locks.map((l) => l.token) };
  return { etag: null, tokens: (parent?.locks ?? []).filter((l) => l.deep).map((l) => l.token) };
}
