import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Envelope, generateKek, localKeks, parseKeks } from '@svc/kit';

// Envelope encryption of secrets at rest: AES-256-GCM data keys wrapped with a KEK.

const keks = (...ids: string[]) => parseKeks(ids.map(generateKek).join(','));

test('a sealed secret opens with its associated data, and holds no plaintext', () => {
  const env = new Envelope(keks('k1'));
  const secret = 'sk-live-0123456789abcdef';
  const sealed = env.seal(secret, 'acct_1/openai');
  expect(sealed).toMatch(/^v1\.k1\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+$/);
  expect(sealed).not.toContain(secret);
  expect(Buffer.from(sealed.replace(/\./g, ''), 'base64url').includes(Buffer.from(secret))).toBe(false);
  expect(env.open(sealed, 'acct_1/openai')).toBe(secret);
  // Each seal has its own data key and nonces: the same secret seals differently.
  expect(env.seal(secret, 'acct_1/openai')).not.toBe(sealed);
});

test('moved to another row, changed, or opened under another KEK, a secret does not open', () => {
  const env = new Envelope(keks('k1'));
  const sealed = env.seal('secret', 'acct_1/openai');
  expect(() => env.open(sealed, 'acct_2/openai')).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
  const parts = sealed.split('.');
  const flipped = Buffer.from(parts[7]!, 'base64url');
  flipped[0]! ^= 1;
  parts[7] = flipped.toString('base64url');
  expect(() => env.open(parts.join('.'), 'acct_1/openai')).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
  expect(() => new Envelope(keks('k1')).open(sealed, 'acct_1/openai')).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
  expect(() => new Envelope(keks('other')).open(sealed, 'acct_1/openai')).toThrow(expect.objectContaining({ code: 'secret_key_unknown' }));
  expect(() => env.open('not sealed', 'acct_1/openai')).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
});

test('rotation: a new current KEK opens old secrets, and rewrap moves them to it without touching the ciphertext', () => {
  const [old] = keks('old');
  const [next] = keks('new');
  const before = new Envelope([old!]).seal('the key', 'a');
  const rotated = new Envelope([next!, old!]);
  expect(rotated.open(before, 'a')).toBe('the key');
  expect(rotated.isCurrent(before)).toBe(false);
  const rewrapped = rotated.rewrap(before, 'a');
  expect(rotated.isCurrent(rewrapped)).toBe(true);
  expect(rewrapped.split('.').slice(5)).toEqual(before.split('.').slice(5));
  // Once every secret is rewrapped, the old KEK can go.
  expect(new Envelope([next!]).open(rewrapped, 'a')).toBe('the key');
});

test('KEKs as the operator gives them', () => {
  expect(parseKeks(`a:${Buffer.alloc(32, 1).toString('base64')}, b:${Buffer.alloc(32, 2).toString('base64')}`).map((k) => k.id)).toEqual(['a', 'b']);
  expect(() => parseKeks('a:short')).toThrow(/32 bytes/);
  expect(() => parseKeks(`:${Buffer.alloc(32).toString('base64')}`)).toThrow(/<id>:<base64 key>/);
  expect(() => parseKeks(`a:${Buffer.alloc(32).toString('base64')},a:${Buffer.alloc(32).toString('base64')}`)).toThrow(/differ/);
  expect(() => parseKeks('')).toThrow(/at least one/);
});

test('a local KEK: the configured ones win; else one generated once into the data folder (0600), then read back', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-kek-'));
  try {
    const configured = parseKeks(generateKek('op'));
    expect(localKeks(configured, dir, 'x-kek', 'x')).toEqual({ keks: configured });
    expect(fs.existsSync(path.join(dir, 'x-kek'))).toBe(false);
    const first = localKeks(undefined, dir, 'x-kek', 'x');
    expect(first.file).toBe(path.join(dir, 'x-kek'));
    expect(first.keks).toHaveLength(1);
    expect(fs.statSync(first.file!).mode & 0o777).toBe(0o600);
    // The next start (or another process of the same folder) opens with the same key.
    const again = localKeks(undefined, dir, 'x-kek', 'x');
    const sealed = new Envelope(first.keks).seal('secret', 'aad');
    expect(new Envelope(again.keks).open(sealed, 'aad')).toBe('secret');
    // A file that is there but cannot be read is an error naming it, never a new key.
    fs.writeFileSync(path.join(dir, 'bad-kek'), 'not a kek');
    expect(() => localKeks(undefined, dir, 'bad-kek', 'the y service')).toThrow(/the y service.*bad-kek/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
