import { nameProblem, normalizeName, scopeIdProblem, scopeProblem } from '@svc/kit';

// The shared rules of user-given names and of scopes (docs/architecture.md, the contract).

test('names: bidirectional controls, invisible format characters and control characters are refused, by code point', () => {
  for (const c of ['\u202a', '\u202e', '\u2066', '\u2069', '\u200e', '\u200f', '\u200b', '\ufeff', '\u00ad', '\u{e0001}']) {
    expect([c.codePointAt(0), nameProblem(`a${c}b`)]).toEqual([c.codePointAt(0), expect.stringContaining('invisible format')]);
  }
  expect(nameProblem('evil\u202egnp.exe')).toContain('U+202E');
  expect(nameProblem('a\u0000b')).toContain('control characters (U+0000)');
  expect(nameProblem('a\nb')).toContain('U+000A');
  for (const ok of ['report.pdf', 'Ünïcödé', 'مرحبا', '日本語', 'emoji 🎉', 'a b']) expect([ok, nameProblem(ok)]).toEqual([ok, null]);
});

test('names: normalized to NFC', () => {
  const decomposed = 'Cafe\u0301';
  expect(normalizeName(decomposed)).toBe('Caf\u00e9');
  expect(normalizeName('Caf\u00e9')).toBe('Caf\u00e9');
});

test('scopes: structured values, never paths', () => {
  for (const ok of ['account', 'project:web', 'project:p1', 'host:host_01abc', 'host:hst_01abc/sim-1', 'project:a.b:c-d_e'])
    expect([ok, scopeProblem(ok)]).toEqual([ok, null]);
  for (const bad of [
    'project:p1/../p2',
    'project:web/x',
    'host:h1/../h2',
    'host:h1/a/b',
    'host:h1/',
    'project:..',
    'project:',
    'project:.hidden',
    'host:a b',
    'team:x',
    'account:x',
    'x',
    '',
    'project:a\u0000',
    'Project:web',
  ]) {
    expect([bad, scopeProblem(bad)]).toEqual([bad, expect.any(String)]);
  }
  expect(scopeIdProblem('a..b')).toContain('..');
  expect(scopeIdProblem('web')).toBeNull();
});
