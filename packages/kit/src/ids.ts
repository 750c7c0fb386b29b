import { randomFillSync } from 'node:crypto';

// Crockford base32: ids sort by creation time as plain strings.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

let last = '';

/**
 * Random bytes from the operating system's CSPRNG, drawn 4 KiB at a time: one call into OpenSSL
 * per ~300 ids instead of one per id (a trading order makes several ids; at ~5 µs a call that was
 * ~5% of an order's CPU). A byte is handed out once. The view is good until the next call.
 */
const POOL = Buffer.alloc(4096);
let pooled = POOL.length;
function randomFromPool(n: number): Buffer {
  if (n > POOL.length) throw new RangeError('randomFromPool: at most 4096 bytes');
  if (pooled + n > POOL.length) {
    randomFillSync(POOL);
    pooled = 0;
  }
  const out = POOL.subarray(pooled, pooled + n);
  pooled += n;
  return out;
}

/** `n` random bytes as hex (client order ids, tokens that need no more than a random name). */
export function randomHex(n: number): string {
  return randomFromPool(n).toString('hex');
}

/**
 * `prefix_` + 10 chars of milliseconds + 16 random chars (80 bits), ULID-shaped, lowercase.
 * Monotonic within a process (as ULID's monotonic generator): an id made in the same millisecond
 * as the previous one continues from it (its first 8 random chars plus one, 8 fresh ones after),
 * so ids made in a row (the fills of one transaction) sort in the order they were made.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const random = (n: number) => {
    const bytes = randomFromPool(n);
    let out = '';
    for (let i = 0; i < n; i++) out += ALPHABET[bytes[i]! & 31];
    return out;
  };
  // In the previous id's millisecond: its first 8 random chars plus one, then 8 new ones (40 bits).
  const body = last.startsWith(time) ? increment(last.slice(0, 18)) + random(8) : time + random(16);
  if (body > last) last = body;
  return `${prefix}_${body}`;
}

/** The next string in base-32 order (8 random chars do not run out in one millisecond). */
function increment(s: string): string {
  const chars = s.split('');
  for (let i = chars.length - 1; i >= 10; i--) {
    const k = ALPHABET.indexOf(chars[i]!);
    if (k < 31) {
      chars[i] = ALPHABET[k + 1]!;
      return chars.join('');
    }
    chars[i] = ALPHABET[0]!;
  }
  return chars.join('');
}

export function hasPrefix(id: string, prefix: string): boolean {
  return id.startsWith(`${prefix}_`) && /^[a-z]+_[0-9a-z]{26}$/.test(id);
}

/** ISO 8601 UTC with milliseconds, the contract's timestamp format. */
export function isoNow(): string {
  return new Date().toISOString();
}

export function toIso(value: Date | string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
