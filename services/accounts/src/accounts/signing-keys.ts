import { createCipheriv, createDecipheriv, createPrivateKey, generateKeyPairSync, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { CompactSign, compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';

/**
 * Signing keys: one Ed25519 pair per account. The public half is stored as a JWK; the private
 * half (PKCS#8) is sealed with AES-256-GCM under a key derived with HKDF-SHA256 from the internal
 * secret, with the account and key id as additional data (a sealed key cannot be moved to another
 * row). Plain private keys exist only in memory, for the time of one signature.
 */

const SEAL_VERSION = 'v1';
const HKDF_SALT = 'svc.accounts.signing-keys';
const HKDF_INFO = 'aes-256-gcm/v1';

export class KeyVault {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, HKDF_SALT, HKDF_INFO, 32));
  }

  seal(plain: Buffer, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [SEAL_VERSION, iv.toString('base64url'), tag.toString('base64url'), ct.toString('base64url')].join('.');
  }

  /** Throws when the secret changed or the data was tampered with. */
  open(sealed: string, aad: string): Buffer {
    const [version, iv, tag, ct] = sealed.split('.');
    if (version !== SEAL_VERSION || !iv || !tag || ct === undefined) throw new Error('unknown sealed key format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
  }
}

/**
 * The secret the vault key is derived from: SVC_INTERNAL_SECRET when set (always in Kubernetes).
 * Without it (the embedded stack), the process's internal secret is random per start, so a secret
 * is kept in <SVC_DATA_DIR>/signing-secret (0600) instead, and sealed keys survive restarts.
 */
export function vaultSecret(config: { SVC_INTERNAL_SECRET?: string; SVC_DATA_DIR: string }): string {
  if (config.SVC_INTERNAL_SECRET) return config.SVC_INTERNAL_SECRET;
  const file = path.resolve(config.SVC_DATA_DIR, 'signing-secret');
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing.length >= 32) return existing;
  } catch {
    // not written yet
  }
  const secret = randomBytes(32).toString('hex');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, secret + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return secret;
}

export const sealAad = (accountId: string, keyId: string) => `${accountId}:${keyId}`;

export interface NewKeyPair {
  publicJwk: JWK;
  privatePkcs8: Buffer;
}

export function generateSigningKey(kid: string): NewKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' }) as JWK;
  return {
    publicJwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid, alg: 'EdDSA', use: 'sig' },
    privatePkcs8: privateKey.export({ format: 'der', type: 'pkcs8' }),
  };
}

export function privateKeyFrom(pkcs8: Buffer): KeyObject {
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}

/** A compact JWS (EdDSA) over the payload bytes, with the key id in the protected header. */
export async function signCompact(payload: Uint8Array, privateKey: KeyObject, kid: string): Promise<string> {
  return new CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid }).sign(privateKey);
}

/** The key id a JWS names, or null when it is not a well-formed compact JWS. */
export function kidOf(jws: string): string | null {
  try {
    const h = decodeProtectedHeader(jws);
    return h.alg === 'EdDSA' && typeof h.kid === 'string' ? h.kid : null;
  } catch {
    return null;
  }
}

/** The payload if the signature is good under the JWK, else null. */
export async function verifyCompact(jws: string, publicJwk: JWK): Promise<Uint8Array | null> {
  try {
    const key = await importJWK({ ...publicJwk, alg: 'EdDSA' }, 'EdDSA');
    const { payload } = await compactVerify(jws, key, { algorithms: ['EdDSA'] });
    return payload;
  } catch {
    return null;
  }
}
