import { randomBytes } from 'node:crypto';

// Crockford base32: ids sort by creation time as plain strings.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** `prefix_` + 10 chars of milliseconds + 16 random chars (80 bits), ULID-shaped, lowercase. */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let rand = '';
  for (let i = 0; i < 16; i++) rand += ALPHABET[bytes[i]! & 31];
  return `${prefix}_${time}${rand}`;
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
