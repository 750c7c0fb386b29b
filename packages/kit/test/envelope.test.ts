import { Envelope, generateKek, parseKeks } from '@svc/kit';

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
