import { toolAllowed, wildcardMatch } from '../dist/agent-tools.js';

describe('tool patterns: * matches any run of characters, in time linear in name × pattern', () => {
  test('names and patterns', () => {
    expect(wildcardMatch('list_drive', 'list_drive')).toBe(true);
    expect(wildcardMatch('list_drive', 'list_drive_versions')).toBe(false);
    expect(wildcardMatch('list_*', 'list_drive')).toBe(true);
    expect(wildcardMatch('*_drive*', 'list_drive_versions')).toBe(true);
    expect(wildcardMatch('*', '')).toBe(true);
    expect(wildcardMatch('**', 'x')).toBe(true);
    expect(wildcardMatch('a*b*c', 'aXbYc')).toBe(true);
    expect(wildcardMatch('a*b*c', 'aXbYcZ')).toBe(false);
    expect(wildcardMatch('*a', 'banana')).toBe(true);
    expect(wildcardMatch('*an*an*a', 'banana')).toBe(true);
    expect(wildcardMatch('*an*an*an*', 'banana')).toBe(false);
    // Nothing but * is special: no regular-expression syntax leaks through.
    expect(wildcardMatch('list.drive', 'list_drive')).toBe(false);
    expect(wildcardMatch('', '')).toBe(true);
    expect(wildcardMatch('', 'a')).toBe(false);
  });

  test('hostile patterns (a dozen stars and more, 100 characters, 200 of them) answer, and say no', () => {
    // As a backtracking RegExp, the first took 12.6 s against one tool name; 16 stars, 76 s.
    const hostile = ['*'.repeat(12) + 'z', '*'.repeat(99) + 'z', `${'*_'.repeat(49)}z`, `${'*s'.repeat(49)}x`];
    for (const p of hostile) expect(wildcardMatch(p, 'list_drive_file_versions_of_searches')).toBe(false);
    expect(toolAllowed(Array(200).fill('*'.repeat(99) + 'z'), 'search_tools')).toBe(false);
    expect(toolAllowed(['*'.repeat(99)], 'search_tools')).toBe(true);
  });
});
