import { hash, randomBytes } from 'node:crypto';

/** `svc_` + 64 lowercase hex (256 bits): an API key. `svch_` + 64 hex: a host credential. */
export const API_KEY_RE = /^svc_[0-9a-f]{64}$/;
export const HOST_CREDENTIAL_RE = /^svch_[0-9a-f]{64}$/;
export const KEY_PREFIX_LENGTH = 12;

export function generateApiKey(): string {
  return `svc_${randomBytes(32).toString('hex')}`;
}

export function generateHostCredential(): string {
  return `svch_${randomBytes(32).toString('hex')}`;
}

/**
 * The stored form of a key. A plain SHA-256 is enough: keys carry 256 random bits, so there is
 * nothing for a slow hash to protect against, and verification stays one hash.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX_LENGTH);
}

const SECRET_ANYWHERE_RE = /svch?_[0-9a-f]{64}/gi;

/**
 * Text with every API key or host credential in it cut to its kind (`svc_[redacted]`): for what
 * a client sent that may end up in a trace or a log, such as a URL with a key pasted into it.
 */
export function redactSecrets(text: string): string {
  return text.replace(SECRET_ANYWHERE_RE, (m) => `${m.slice(0, m.indexOf('_') + 1)}[redacted]`);
}
