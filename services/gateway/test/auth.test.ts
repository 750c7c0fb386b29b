import { presentedSecret } from '@svc/gateway';

const KEY = `svc_${'ab'.repeat(32)}`;
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

describe('presentedSecret', () => {
  test('takes a Bearer key (scheme case-insensitive)', () => {
    expect(presentedSecret(`Bearer ${KEY}`, { basic: false })).toBe(KEY);
    expect(presentedSecret(`bearer ${KEY}`, { basic: false })).toBe(KEY);
  });

  test('takes HTTP Basic with the key as password and any user, only where allowed', () => {
    expect(presentedSecret(basic('anyone', KEY), { basic: true })).toBe(KEY);
    expect(presentedSecret(basic('', KEY), { basic: true })).toBe(KEY);
    expect(presentedSecret(basic('anyone', KEY), { basic: false })).toBe('');
  });

  test('gives nothing usable for missing or odd headers', () => {
    expect(presentedSecret(undefined, { basic: true })).toBeUndefined();
    expect(presentedSecret('Token abc', { basic: true })).toBe('');
    expect(presentedSecret('Basic !!!', { basic: true })).toBe('');
    expect(presentedSecret('Bearer', { basic: true })).toBe('');
  });
});
