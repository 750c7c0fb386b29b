import { contentTypeFor, decodeCursor, encodeCursor, etagOf, validName } from '../../dist/items/rules.js';

const SHA = 'a'.repeat(64);
const file = { id: 'file_01m7zzzzzzzzzzzzzzzzzzzzzz', kind: 'file' as const, sha256: SHA, version: 3 };

describe('drive rules', () => {
  test('a file’s ETag is its quoted sha256; a folder’s changes with its version', () => {
    expect(etagOf(file)).toBe(`"${SHA}"`);
    const folder = { id: 'fld_01m7zzzzzzzzzzzzzzzzzzzzzz', kind: 'folder' as const, sha256: null, version: 1 };
    expect(etagOf(folder)).not.toBe(etagOf({ ...folder, version: 2 }));
  });

  test('names: not empty, no slash or control characters, at most 255 bytes', () => {
    for (const bad of [undefined, '', '   ', '.', '..', 'a/b', 'a\nb', 'a\u0000', 'x'.repeat(256), 'é'.repeat(128)]) {
      expect(() => validName(bad)).toThrow(expect.objectContaining({ kind: 'invalid_argument', code: 'invalid_name' }));
    }
    for (const ok of ['a', 'a b.txt', ' lead', 'x'.repeat(255), 'é'.repeat(127), '日本語.md', 'a\\b']) expect(validName(ok)).toBe(ok);
  });

  test('content types: a sane given one, else a guess from the extension', () => {
    expect(contentTypeFor('text/plain; charset=utf-8', 'x')).toBe('text/plain; charset=utf-8');
    expect(contentTypeFor('bogus', 'a.PNG')).toBe('image/png');
    expect(contentTypeFor('text/html\r\nX: y', 'a')).toBe('application/octet-stream');
    expect(contentTypeFor(undefined, 'noext')).toBe('application/octet-stream');
  });

  test('cursors round-trip and reject garbage', () => {
    const c = encodeCursor({ kind: 'file', name: 'ä/b', id: file.id });
    expect(decodeCursor(c)).toEqual({ rank: 1, name: 'ä/b', id: file.id });
    for (const bad of ['garbage', Buffer.from('[2,"a","x"]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
      expect(() => decodeCursor(bad)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
    }
  });
});
