import fs from 'node:fs';
import path from 'node:path';

import { ERROR_KINDS } from '@svc/kit';

/**
 * Docs and code agree on error codes: every code the docs name with a status ("409
 * `name_taken`", "**404** `thread_not_found`") is a code the source answers with, and where the
 * source throws it as a DomainError its kind's status is the one the docs give. Until the error
 * codes have a registry of their own (code → status, message), the source's string literals are
 * the registry: a code is known when a service, package or app names it as a literal.
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

const CODE = '[a-z][a-z0-9]*(?:_[a-z0-9]+)+';
const known = new Set<string>();
/** The HTTP statuses each code is thrown with (DomainError's kind). */
const thrownAs = new Map<string, Set<number>>();
for (const file of ['services', 'packages', 'apps'].flatMap((d) => sources(path.join(ROOT, d)))) {
  const text = fs.readFileSync(file, 'utf8');
  for (const m of text.matchAll(new RegExp(`['\`](${CODE})['\`]`, 'g'))) known.add(m[1]!);
  for (const m of text.matchAll(new RegExp(`DomainError\\(\\s*'(\\w+)',\\s*'(${CODE})'`, 'g'))) {
    const status = ERROR_KINDS[m[1] as keyof typeof ERROR_KINDS]?.http;
    if (status) thrownAs.set(m[2]!, (thrownAs.get(m[2]!) ?? new Set()).add(status));
  }
}

/** Every "<status> `code`" of docs/*.md and the README. */
const named: Array<{ where: string; status: number; code: string }> = [];
for (const file of [...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => path.join('docs', f)), 'README.md']) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  for (const m of text.matchAll(new RegExp(`\\b([45]\\d\\d)\\*{0,2}\\s+\`(${CODE})\``, 'g'))) {
    const line = text.slice(0, m.index).split('\n').length;
    named.push({ where: `${file}:${line}`, status: Number(m[1]), code: m[2]! });
  }
}

test('the docs name many error codes with their status', () => {
  expect(named.length).toBeGreaterThan(200);
  expect(thrownAs.size).toBeGreaterThan(150);
});

test('every code the docs name is one the source answers with', () => {
  expect(named.filter((n) => !known.has(n.code)).map((n) => `${n.where}: ${n.status} ${n.code}`)).toEqual([]);
});

test('a code the docs name with a status is thrown with that status', () => {
  const wrong = named.filter((n) => thrownAs.has(n.code) && !thrownAs.get(n.code)!.has(n.status));
  expect(wrong.map((n) => `${n.where}: ${n.status} ${n.code} (thrown as ${[...thrownAs.get(n.code)!].join(', ')})`)).toEqual([]);
});
