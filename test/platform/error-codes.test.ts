import fs from 'node:fs';
import path from 'node:path';

import { ERROR_CODES, ERROR_KINDS, type ErrorCode, isErrorCode, statusesOf } from '@svc/kit';

/**
 * The error-code registry (packages/kit/src/error-codes.ts) is the source of truth, and docs and
 * code agree with it:
 * - every code thrown with a literal (a DomainError, the `invalid` helper and those of a
 *   fixed kind, the gateway's `sendError` and `refuseUpgrade`) is registered with the status it is
 *   thrown with (the compiler already refuses an unregistered code: the code parameters are
 *   `ErrorCode`);
 * - every "<status> `code`" the docs name is registered with that status, unless it is not the
 *   platform's: the local host's own control endpoint (apps/host, docs/host.md) and OAuth's protocol
 *   errors (`{"error": "temporarily_unavailable"}`) have codes of their own, outside the registry;
 * - no registered code goes unused: the source names each one as a literal.
 */

const ROOT = path.join(__dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', 'gen', 'generated', 'test']);

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP.has(e.name)) sources(p, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const CODE = '[a-z][a-z0-9]*(?:_[a-z0-9]+)*';
const REGISTRY = path.join(ROOT, 'packages/kit/src/error-codes.ts');
/** Helpers that throw with a fixed kind and the code as their first argument. */
const FIXED_KIND: Record<string, keyof typeof ERROR_KINDS> = {
  unauthenticated: 'unauthenticated',
  refused: 'unauthenticated',
  unprocessable: 'unprocessable',
};

/** Where each code is thrown, and with which HTTP status. */
const thrown: Array<{ where: string; code: string; status: number }> = [];
/** Every snake_case literal of the source outside the registry. */
const named = new Set<string>();
/** The literals of what answers with codes of its own (the local host, OAuth's protocol errors). */
const OWN_CODES = [path.join(ROOT, 'apps/host/src'), path.join(ROOT, 'services/gateway/src/fronts/oauth')];
const outside = new Set<string>();
for (const file of ['services', 'packages', 'apps'].flatMap((d) => sources(path.join(ROOT, d)))) {
  if (file === REGISTRY) continue;
  const text = fs.readFileSync(file, 'utf8');
  const at = (i: number) => `${path.relative(ROOT, file)}:${text.slice(0, i).split('\n').length}`;
  const add = (i: number, code: string, status: number | undefined) => status && thrown.push({ where: at(i), code, status });
  for (const m of text.matchAll(new RegExp(`['\`](${CODE})['\`]`, 'g'))) {
    named.add(m[1]!);
    if (OWN_CODES.some((d) => file.startsWith(d))) outside.add(m[1]!);
  }
  for (const m of text.matchAll(new RegExp(`DomainError\\(\\s*'(\\w+)',\\s*'(${CODE})'`, 'g'))) {
    add(m.index, m[2]!, ERROR_KINDS[m[1] as keyof typeof ERROR_KINDS]?.http);
  }
  for (const m of text.matchAll(new RegExp(`\\b(?:sendError\\(\\s*req,\\s*res|refuseUpgrade\\(\\s*socket),\\s*(\\d{3}),\\s*'(${CODE})'`, 'g'))) {
    add(m.index, m[2]!, Number(m[1]));
  }
  for (const m of text.matchAll(new RegExp(`\\b(${Object.keys(FIXED_KIND).join('|')})\\(\\s*'(${CODE})'`, 'g'))) {
    add(m.index, m[2]!, ERROR_KINDS[FIXED_KIND[m[1]!]!].http);
  }
  for (const m of text.matchAll(new RegExp(`\\binvalid\\([^;]*?,\\s*'(${CODE})'\\)`, 'g'))) add(m.index, m[1]!, 400);
}

/** Every "<status> `code`" of docs/*.md and the README. */
const documented: Array<{ where: string; status: number; code: string }> = [];
for (const file of [...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => path.join('docs', f)), 'README.md']) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  for (const m of text.matchAll(new RegExp(`\\b([45]\\d\\d)\\*{0,2}\\s+\`(${CODE})\``, 'g'))) {
    const line = text.slice(0, m.index).split('\n').length;
    documented.push({ where: `${file}:${line}`, status: Number(m[1]), code: m[2]! });
  }
}

const registered = (code: string, status: number) => isErrorCode(code) && statusesOf(code).includes(status);

test('the registry holds the codes, each with a status and a public sentence', () => {
  expect(Object.keys(ERROR_CODES).length).toBeGreaterThan(250);
  expect(thrown.length).toBeGreaterThan(400);
  expect(documented.length).toBeGreaterThan(200);
  const bad = Object.entries(ERROR_CODES).filter(([, e]) => !(e.status >= 400 && e.status < 600) || !/^[A-Z].*\.$/.test(e.message));
  expect(bad).toEqual([]);
});

test('every code thrown is registered with the status it is thrown with', () => {
  const wrong = thrown.filter((t) => !registered(t.code, t.status));
  expect(wrong.map((t) => `${t.where}: ${t.status} ${t.code} (registered: ${isErrorCode(t.code) ? statusesOf(t.code).join(', ') : 'no'})`)).toEqual(
    [],
  );
});

test('a code the docs name with a status is registered with that status', () => {
  const wrong = documented.filter((n) => !registered(n.code, n.status) && !(outside.has(n.code) && !isErrorCode(n.code)));
  expect(wrong.map((n) => `${n.where}: ${n.status} ${n.code} (registered: ${isErrorCode(n.code) ? statusesOf(n.code).join(', ') : 'no'})`)).toEqual(
    [],
  );
});

test('no registered code goes unused', () => {
  expect((Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => !named.has(c))).toEqual([]);
});

test('a code with a second status is thrown with both', () => {
  const twice = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => statusesOf(c).length > 1);
  expect(twice.filter((c) => statusesOf(c).some((s) => !thrown.some((t) => t.code === c && t.status === s)))).toEqual([]);
});
