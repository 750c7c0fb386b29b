import { grepWorkers } from '../../dist/files/grep.js';
import { compilePattern, MAX_PROGRAM_SIZE, PatternError } from '../../dist/files/pattern.js';
import { searchText } from '../../dist/files/search-text.js';

const re = (pattern: string, ignoreCase = false) => compilePattern(pattern, { regex: true, ignoreCase });
const refused = (pattern: string) => {
  try {
    re(pattern);
  } catch (err) {
    expect(err).toBeInstanceOf(PatternError);
    return (err as Error).message;
  }
  throw new Error(`${pattern} was accepted`);
};

describe('grep patterns: JavaScript syntax, matched by RE2 in linear time', () => {
  test('where the first match is, in UTF-16 columns, as RegExp says', () => {
    const cases: Array<[string, string, boolean?]> = [
      ['t\\w+', 'a tree'],
      ['^\\s*export\\s+(async\\s+)?function\\s+\\w+', '  export async function f() {'],
      ['[0-9]{4}-[0-9]{2}-[0-9]{2}', 'on 2026-11-28 at'],
      ['b', '😀éb'],
      ['ÉCOLE', 'une école', true],
      ['(?<year>\\d{4})', 'in 1999'],
      ['\\u00e9', 'café'],
      ['[^]x', 'ax'],
      ['a|b', 'zzz'],
      ['\\bcat\\b', 'concat cat'],
    ];
    for (const [p, line, i] of cases) expect([p, re(p, i).firstIndex(line)]).toEqual([p, line.search(new RegExp(p, i ? 'i' : ''))]);
  });

  test('a literal is a literal', () => {
    const m = compilePattern('a.b(', { regex: false, ignoreCase: false });
    expect(m.firstIndex('axb( a.b(')).toBe(5);
    expect(compilePattern('WORD', { regex: false, ignoreCase: true }).firstIndex('a word')).toBe(2);
  });

  test('the hostile pattern answers at once, as a no', () => {
    for (const n of [30, 10_240, 1_000_000]) expect(re('^(a+)+$').firstIndex(`${'a'.repeat(n)}!`)).toBe(-1);
    expect(re('^(a+)+$').firstIndex('a'.repeat(10_240))).toBe(0);
    expect(re('(x+x+)+y').firstIndex('x'.repeat(100_000))).toBe(-1);
  });

  test('what the linear-time engine cannot run is named, as are syntax errors and sizes', () => {
    expect(refused('(a)\\1')).toBe('pattern: backreferences (\\1) are not supported (linear-time engine)');
    expect(refused('(?<n>a)\\k<n>')).toMatch(/^pattern: backreferences \(\\k<name>\) are not supported/);
    expect(refused('a(?=b)')).toMatch(/^pattern: lookahead \(\?=…\) is not supported/);
    expect(refused('a(?!b)')).toMatch(/^pattern: lookahead \(\?!…\) is not supported/);
    expect(refused('(?<=a)b')).toMatch(/^pattern: lookbehind \(\?<=…\) is not supported/);
    expect(refused('(?<!a)b')).toMatch(/^pattern: lookbehind \(\?<!…\) is not supported/);
    expect(refused('(')).toMatch(/^pattern: .*Unterminated group/);
    expect(refused('a{1001}')).toMatch(/^pattern: invalid repeat count.*\(linear-time engine\)$/);
    expect(refused('\\w{1000}'.repeat(3))).toMatch(
      new RegExp(`^pattern: too large for the linear-time engine \\(\\d+ instructions, at most ${MAX_PROGRAM_SIZE}\\)`),
    );
    expect(refused('x'.repeat(1001))).toBe('pattern: at most 1000 characters.');
    expect(refused('')).toBe('pattern: required.');
    // Escapes and classes that only look like the unsupported kinds.
    for (const ok of ['\\(?=', '[(?=]', '\\\\']) expect(() => re(ok)).not.toThrow();
  });

  test('a file: its matching lines (\\n or \\r\\n), at most max, null when not text', () => {
    const bytes = Buffer.from('alpha\r\nbeta\n\ngamma beta\nbeta\r');
    expect(searchText(re('beta'), bytes, 10)).toEqual([
      { line: 2, column: 1, text: 'beta' },
      { line: 4, column: 7, text: 'gamma beta' },
      { line: 5, column: 1, text: 'beta\r' },
    ]);
    expect(searchText(re('beta'), bytes, 1)).toHaveLength(1);
    expect(searchText(re('^$'), bytes, 10)).toEqual([{ line: 3, column: 1, text: '' }]);
    expect(searchText(re('x'), Buffer.from([0x61, 0, 0x62]), 10)).toBeNull();
    expect(searchText(re('x'), Buffer.from([0xff, 0xfe]), 10)).toBeNull();
    expect(searchText(re('a'), Buffer.from(`${'a'.repeat(600)}\n`), 10)![0]!.text).toHaveLength(500);
  });
});

describe('the grep worker', () => {
  test('compiles, searches, and says why a pattern is refused (400 invalid_pattern)', async () => {
    const s = grepWorkers.open(10_000, 10);
    await s.compile('^(a+)+$', true, false);
    expect(await s.search(Buffer.from(`${'a'.repeat(10_240)}!\naaa\n`), 10)).toEqual([{ line: 2, column: 1, text: 'aaa' }]);
    s.close();
    const bad = grepWorkers.open(10_000, 10);
    await expect(bad.compile('(a)\\1', true, false)).rejects.toMatchObject({ kind: 'invalid_argument', code: 'invalid_pattern' });
    bad.close();
  });

  test('a search past its deadline is stopped mid-match: 422 grep_timeout, and the next search works', async () => {
    // Linear, but about 2,000 instructions per character of a pseudo-random line (no literal to
    // skip it by): 2 MB take tens of seconds.
    let text = '';
    for (let x = 1; text.length < 2_000_000;) {
      x = (x * 48271) % 2147483647;
      text += 'abcdefgh '[x % 9];
    }
    const slow = grepWorkers.open(1000, 10);
    await slow.compile('(.{1,50}a){12}[hz]{7}', true, false);
    await expect(slow.search(Buffer.from(text), 10)).rejects.toMatchObject({
      kind: 'unprocessable',
      code: 'grep_timeout',
      details: { timeoutMs: 1000 },
    });
    slow.close();
    const next = grepWorkers.open(10_000, 10);
    await next.compile('h', false, false);
    expect(await next.search(Buffer.from('abc\nh\n'), 10)).toEqual([{ line: 2, column: 1, text: 'h' }]);
    next.close();
  });
});
