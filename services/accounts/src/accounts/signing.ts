import type { JWK } from 'jose';

import { DomainError, newId, type Principal } from '@svc/kit';

import { actorOf, requireAccountWide, requireAuthority, requireManager, SYSTEM_ACTOR } from './access.js';
import { AccountsCore, parseJson } from './core.js';
import { generateSigningKey, kidOf, privateKeyFrom, sealAad, signCompact, verifyCompact } from './signing-keys.js';
import type { Actor, SigningKeyRow } from './store.js';

/** Largest payload a signature covers. */
export const MAX_SIGN_BYTES = 64 * 1024;

/** Public view of a signing key. */
export interface PublicKeyView {
  id: string;
  jwk: Record<string, unknown>;
  createdAt: Date;
  retiredAt: Date | null;
  verifyUntil: Date | null;
}
const publicKeyView = (k: SigningKeyRow): PublicKeyView => ({
  id: k.id,
  jwk: k.public_jwk,
  createdAt: k.created_at,
  retiredAt: k.retired_at,
  verifyUntil: k.verify_until,
});
/** An account's signing keys: created on first use, rotated with a grace period; signing and verifying. */
export class SigningKeys extends AccountsCore {
  private newSigningKey(accountId: string) {
    const kid = newId('sk');
    const pair = generateSigningKey(kid);
    return {
      id: kid,
      account_id: accountId,
      public_jwk: pair.publicJwk as unknown as Record<string, unknown>,
      private_key_enc: this.deps.vault.seal(pair.privatePkcs8, sealAad(accountId, kid)),
    };
  }

  /** The current key, created on first use (concurrent first uses agree on one). */
  private async currentKey(accountId: string): Promise<SigningKeyRow> {
    const existing = await this.store.currentSigningKey(accountId);
    if (existing) return existing;
    const created = await this.sql.tx(async (q) => {
      const k = this.newSigningKey(accountId);
      if (!(await this.store.insertSigningKeyIfNone(q, k))) return false;
      await this.audit(q, {
        accountId,
        action: 'signing_key.created',
        actor: SYSTEM_ACTOR,
        target: { kind: 'signing_key', id: k.id },
        data: { keyId: k.id, reason: 'first use' },
      });
      return true;
    });
    if (created) this.kick();
    return (await this.store.currentSigningKey(accountId))!;
  }

  private async keysView(accountId: string): Promise<{ current: PublicKeyView; previous: PublicKeyView[] }> {
    const current = await this.currentKey(accountId);
    const previous = await this.store.verifiableRetiredKeys(accountId);
    return { current: publicKeyView(current), previous: previous.map(publicKeyView) };
  }

  async getSigningKey(p: Principal, accountId: string) {
    await this.access(p, accountId);
    return this.keysView(accountId);
  }

  private async rotate(accountId: string, actor: Actor, graceHours: number, reason: string): Promise<void> {
    await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const old = await this.store.currentSigningKey(accountId, q, true);
      const verifyUntil = new Date(Date.now() + graceHours * 3600_000);
      if (old) await this.store.retireSigningKey(q, old.id, verifyUntil);
      const k = this.newSigningKey(accountId);
      await this.store.insertSigningKeyIfNone(q, k);
      await this.audit(q, {
        accountId,
        action: 'signing_key.rotated',
        actor,
        target: { kind: 'signing_key', id: k.id },
        data: { keyId: k.id, previousKeyId: old?.id ?? null, previousVerifyUntil: old ? verifyUntil.toISOString() : null, reason },
      });
    });
    this.kick();
  }

  /** A new current key; the old public key keeps verifying for the grace period. */
  async rotateSigningKey(p: Principal, accountId: string, graceHours: number | undefined) {
    requireAuthority(p);
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    if (graceHours !== undefined && (!Number.isInteger(graceHours) || graceHours < 0 || graceHours > 8760)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'gracePeriodHours: must be an integer from 0 to 8760');
    }
    const grace = graceHours ?? (await this.currentSettings(accountId)).doc.signing.gracePeriodHours;
    await this.rotate(accountId, actorOf(p), grace, 'requested');
    return this.keysView(accountId);
  }

  /** Signs a JSON payload with the account's current key: a compact JWS (EdDSA). */
  async sign(p: Principal, accountId: string, payloadJson: string): Promise<{ jws: string; keyId: string }> {
    await this.access(p, accountId);
    const bytes = Buffer.from(payloadJson, 'utf8');
    if (bytes.length > MAX_SIGN_BYTES) throw new DomainError('too_large', 'payload_too_large', 'A signed payload is at most 64 KiB.');
    parseJson(payloadJson, 'The payload');
    let key = await this.currentKey(accountId);
    let pkcs8: Buffer;
    try {
      pkcs8 = this.deps.vault.open(key.private_key_enc, sealAad(accountId, key.id));
    } catch (err) {
      // The secret changed (or the row was tampered with): this private key is lost for good.
      // Rotate so signing goes on; the old public key keeps verifying what it signed.
      this.deps.log.warn({ err, accountId, keyId: key.id }, 'signing key cannot be unsealed; rotating');
      const grace = (await this.currentSettings(accountId)).doc.signing.gracePeriodHours;
      await this.rotate(accountId, SYSTEM_ACTOR, grace, 'private key could not be unsealed');
      key = await this.currentKey(accountId);
      pkcs8 = this.deps.vault.open(key.private_key_enc, sealAad(accountId, key.id));
    }
    const jws = await signCompact(bytes, privateKeyFrom(pkcs8), key.id);
    pkcs8.fill(0);
    return { jws, keyId: key.id };
  }

  /** Verifies a JWS with the account's current key or a retired one inside its grace period. */
  async verify(p: Principal, accountId: string, jws: string): Promise<{ valid: boolean; keyId?: string; payloadJson?: string; reason?: string }> {
    await this.access(p, accountId);
    const kid = kidOf(jws);
    if (!kid) return { valid: false, reason: 'malformed' };
    const key = await this.store.signingKeyById(accountId, kid);
    if (!key) return { valid: false, keyId: kid, reason: 'unknown_key' };
    if (key.retired_at && (!key.verify_until || key.verify_until.getTime() <= Date.now())) {
      return { valid: false, keyId: kid, reason: 'key_expired' };
    }
    const payload = await verifyCompact(jws, key.public_jwk as unknown as JWK);
    if (!payload) return { valid: false, keyId: kid, reason: 'bad_signature' };
    return { valid: true, keyId: kid, payloadJson: Buffer.from(payload).toString('utf8') };
  }
}
