import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { DomainError } from './errors.js';

/**
 * Envelope encryption for secrets kept at rest (provider keys): each secret is encrypted with its
 * own random data key (AES-256-GCM), and the data key is encrypted ("wrapped") with a key-encryption
 * key (KEK) from the environment, also AES-256-GCM. Rotating the KEK re-wraps the data keys
 * (`rewrap`) without touching the secrets' ciphertexts. Associated data (e.g. the account and the
 * provider) binds a sealed secret to its row: moved to another row, it no longer opens.
 *
 * A sealed secret is one string: `v1.<kek id>.<wrap iv>.<wrap tag>.<wrapped key>.<iv>.<tag>.<ciphertext>`,
 * each part base64url.
 */

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const KEK_ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

export interface Kek {
  id: string;
  key: Buffer;
}

const b64 = (b: Buffer) => b.toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url');

function encrypt(key: Buffer, plaintext: Buffer, aad: Buffer): { iv: Buffer; tag: Buffer; data: Buffer } {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

function decrypt(key: Buffer, iv: Buffer, tag: Buffer, data: Buffer, aad: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(data), decipher.final()]);
}

const unreadable = () => new DomainError('internal', 'secret_unreadable', 'A stored secret could not be read.');

/**
 * Parses KEKs as an operator gives them: `<id>:<32 bytes, base64>`, comma-separated, the first one
 * current (new secrets are wrapped with it); the others only open what they wrapped.
 */
export function parseKeks(value: string): Kek[] {
  const keks = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(':');
      const id = entry.slice(0, colon);
      const key = Buffer.from(entry.slice(colon + 1), 'base64');
      if (colon < 1 || !KEK_ID_RE.test(id)) throw new Error('each key must be <id>:<base64 key>, the id of letters, digits, _ or - (at most 32)');
      if (key.length !== KEY_BYTES) throw new Error(`the key ${id} must be ${KEY_BYTES} bytes (base64), not ${key.length}`);
      return { id, key };
    });
  if (!keks.length) throw new Error('at least one key is required');
  if (new Set(keks.map((k) => k.id)).size !== keks.length) throw new Error('key ids must differ');
  return keks;
}

/** A new KEK in the form `parseKeks` reads (`<id>:<base64>`). */
export const generateKek = (id: string) => `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;

/**
 * A service's KEKs: the configured ones (its `SVC_<NAME>_KEK`), else one kept in a file of the data
 * folder (mode 0600), generated at the first start, so that the one-process stack seals without
 * configuration. Two processes of one data folder starting together keep the first one's.
 */
export function localKeks(configured: Kek[] | undefined, dataDir: string, fileName: string, owner: string): { keks: Kek[]; file?: string } {
  if (configured) return { keks: configured };
  const file = path.resolve(dataDir, fileName);
  const read = () => parseKeks(fs.readFileSync(file, 'utf8').trim());
  try {
    return { keks: read(), file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${owner}'s KEK file ${file} is unreadable: ${(err as Error).message}`);
  }
  const kek = generateKek('local');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, kek + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process of the same data folder wrote it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { keks: read(), file };
    throw err;
  }
  fs.chmodSync(file, 0o600); // whatever the umask
  return { keks: parseKeks(kek), file };
}

export class Envelope {
  private readonly byId: Map<string, Buffer>;
  private readonly current: Kek;

  constructor(keks: Kek[]) {
    if (!keks.length) throw new Error('Envelope: at least one key-encryption key is required');
    this.current = keks[0]!;
    this.byId = new Map(keks.map((k) => [k.id, k.key]));
  }

  /** Encrypts a secret under a new data key, wrapped with the current KEK. */
  seal(plaintext: string, aad: string): string {
    const ad = Buffer.from(aad, 'utf8');
    const dataKey = randomBytes(KEY_BYTES);
    const wrapped = encrypt(this.current.key, dataKey, ad);
    const sealed = encrypt(dataKey, Buffer.from(plaintext, 'utf8'), ad);
    dataKey.fill(0);
    return [VERSION, this.current.id, b64(wrapped.iv), b64(wrapped.tag), b64(wrapped.data), b64(sealed.iv), b64(sealed.tag), b64(sealed.data)].join(
      '.',
    );
  }

  /** Decrypts a sealed secret; a wrong associated data, an unknown KEK or a changed byte is refused. */
  open(sealed: string, aad: string): string {
    const { kek, parts } = this.parse(sealed);
    const ad = Buffer.from(aad, 'utf8');
    try {
      const dataKey = decrypt(kek, unb64(parts[2]!), unb64(parts[3]!), unb64(parts[4]!), ad);
      const plaintext = decrypt(dataKey, unb64(parts[5]!), unb64(parts[6]!), unb64(parts[7]!), ad);
      dataKey.fill(0);
      return plaintext.toString('utf8');
    } catch {
      throw unreadable();
    }
  }

  /** Whether a sealed secret is wrapped with the current KEK (else `rewrap` it). */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.current.id;
  }

  /** The same secret with its data key re-wrapped under the current KEK; its ciphertext is unchanged. */
  rewrap(sealed: string, aad: string): string {
    const { kek, parts } = this.parse(sealed);
    const ad = Buffer.from(aad, 'utf8');
    let dataKey: Buffer;
    try {
      dataKey = decrypt(kek, unb64(parts[2]!), unb64(parts[3]!), unb64(parts[4]!), ad);
    } catch {
      throw unreadable();
    }
    const wrapped = encrypt(this.current.key, dataKey, ad);
    dataKey.fill(0);
    return [VERSION, this.current.id, b64(wrapped.iv), b64(wrapped.tag), b64(wrapped.data), ...parts.slice(5)].join('.');
  }

  private parse(sealed: string): { kek: Buffer; parts: string[] } {
    const parts = sealed.split('.');
    if (parts.length !== 8 || parts[0] !== VERSION) throw unreadable();
    const kek = this.byId.get(parts[1]!);
    if (!kek)
      throw new DomainError('internal', 'secret_key_unknown', `A stored secret is wrapped with the key ${parts[1]}, which is not configured.`);
    return { kek, parts };
  }
}
