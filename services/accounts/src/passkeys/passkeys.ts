import { createHash, timingSafeEqual } from 'node:crypto';

import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';

import { DomainError, type ErrorCode, type Principal } from '@svc/kit';

import { ACCOUNT_ID_RE } from '../accounts/access.js';
import { AccountsCore, type AccountsDeps, Name, parse, parseJson } from '../accounts/core.js';
import { personActor } from '../oauth/oauth.js';
import type { Ceremony, PasskeyRow, PasskeyStore } from './store.js';

/**
 * Passkeys (docs/oauth.md, "Passkeys"): a person's WebAuthn credentials, the better sign-in to the
 * gateway's pages. The gateway names the relying party (the RP ID and the one origin, from
 * SVC_PUBLIC_URL) and the browser; this part keeps the rest, with @simplewebauthn/server doing
 * the protocol: options (user verification required, discoverable credentials, no attestation),
 * the challenge (stored as its hash, bound to the browser, taken once, two minutes), the checks
 * of an answer (origin, RP ID, challenge, user verified, signature, counter), the credentials
 * (public key, counter, backup state) and the audit of each registration, removal and sign-in.
 */

/** How long a ceremony may take (the browser's own timeout is half of it). */
const CHALLENGE_SECONDS = 120;
const TIMEOUT_MS = 60_000;
/** Passkeys a person may have. */
const MAX_PASSKEYS = 20;
const MAX_RESPONSE_BYTES = 32 * 1024;

const internalOnly = () => new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
const invalid = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);
const refused = (code: ErrorCode, message: string) => new DomainError('unauthenticated', code, message);
const spent = () => refused('passkey_challenge_spent', 'This passkey request has expired or was used already: start again.');

export interface PasskeyParty {
  rpId: string;
  origin: string;
  rpName: string;
}

export interface PasskeysDeps extends AccountsDeps {
  passkeys: PasskeyStore;
}

/** The relying party as the gateway names it: an origin whose host is the RP ID (or below it). */
function checkParty(party: PasskeyParty | undefined): PasskeyParty {
  if (!party) throw invalid('party: required.');
  let url: URL;
  try {
    url = new URL(party.origin);
  } catch {
    throw invalid('party.origin: must be an origin.');
  }
  const host = url.hostname;
  if (!/^https?:$/.test(url.protocol) || url.origin !== party.origin) throw invalid('party.origin: must be an http(s) origin.');
  if (!party.rpId || (host !== party.rpId && !host.endsWith(`.${party.rpId}`)))
    throw invalid('party.rpId: must be the origin’s host or a parent of it.');
  if (!party.rpName || party.rpName.length > 100) throw invalid('party.rpName: 1 to 100 characters.');
  return party;
}

function checkBinding(binding: string): void {
  if (!/^[A-Za-z0-9_-]{20,200}$/.test(binding)) throw invalid('binding: 20 to 200 base64url characters.');
}

function checkUser(userId: string): void {
  if (!ACCOUNT_ID_RE.test(userId)) throw invalid('userId: must be an account id.');
}

const challengeId = (challenge: string) => createHash('sha256').update(challenge).digest('base64url');

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** A browser's answer, bounded and parsed, with the challenge its client data carries. */
function answerOf<T extends { id?: unknown; response?: { clientDataJSON?: unknown } }>(json: string): { answer: T; challenge: string } {
  if (Buffer.byteLength(json) > MAX_RESPONSE_BYTES) throw invalid('responseJson: at most 32 KiB.');
  const answer = parseJson(json, 'responseJson') as T;
  if (!answer || typeof answer !== 'object' || typeof answer.id !== 'string' || typeof answer.response?.clientDataJSON !== 'string') {
    throw invalid('responseJson: not a WebAuthn credential.');
  }
  let challenge: unknown;
  try {
    challenge = (JSON.parse(Buffer.from(answer.response.clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
  } catch {
    challenge = undefined;
  }
  if (typeof challenge !== 'string' || !challenge) throw invalid('responseJson: its client data carries no challenge.');
  return { answer, challenge };
}

/** What an answer must show: this challenge, the origin, the RP ID, the person verified. */
const expected = (party: PasskeyParty, challenge: string) => ({
  expectedChallenge: challenge,
  expectedOrigin: party.origin,
  expectedRPID: party.rpId,
  requireUserVerification: true,
});

/** The library's verification, its refusal (a throw, or `verified: false`) answered as `passkey_invalid`. */
async function verified<T extends { verified: boolean }>(verify: () => Promise<T>): Promise<T & { verified: true }> {
  let v: T;
  try {
    v = await verify();
  } catch (err) {
    throw refused('passkey_invalid', (err as Error).message);
  }
  if (!v.verified) throw refused('passkey_invalid', 'The passkey could not be verified.');
  return v as T & { verified: true };
}

export class Passkeys extends AccountsCore {
  private readonly passkeys: PasskeyStore;

  constructor(deps: PasskeysDeps) {
    super(deps);
    this.passkeys = deps.passkeys;
  }

  private requireSystem(p: Principal): void {
    if (p.kind !== 'system') throw internalOnly();
  }

  /** A person (an account of kind user) that exists. */
  private async person(userId: string) {
    checkUser(userId);
    const account = await this.store.byId(userId);
    if (!account || account.kind !== 'user') throw new DomainError('not_found', 'account_not_found', 'Account not found.');
    return account;
  }

  /** The options of a registration (for `userId`) or of a sign-in, and their challenge kept. */
  async begin(p: Principal, r: { ceremony: string; userId: string; party?: PasskeyParty; binding: string }): Promise<string> {
    this.requireSystem(p);
    const party = checkParty(r.party);
    checkBinding(r.binding);
    let options: { challenge: string };
    let ceremony: Ceremony;
    if (r.ceremony === 'registration') {
      ceremony = 'registration';
      const account = await this.person(r.userId);
      const existing = await this.passkeys.ofUser(account.id, MAX_PASSKEYS);
      if (existing.length >= MAX_PASSKEYS) throw new DomainError('conflict', 'too_many_passkeys', `A person has at most ${MAX_PASSKEYS} passkeys.`);
      options = await generateRegistrationOptions({
        rpName: party.rpName,
        rpID: party.rpId,
        userName: account.email ?? account.name,
        userDisplayName: account.name,
        userID: new TextEncoder().encode(account.id),
        timeout: TIMEOUT_MS,
        attestationType: 'none',
        excludeCredentials: existing.map((k) => ({ id: k.id, transports: k.transports })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      });
    } else if (r.ceremony === 'authentication') {
      ceremony = 'authentication';
      options = await generateAuthenticationOptions({ rpID: party.rpId, userVerification: 'required', timeout: TIMEOUT_MS });
    } else {
      throw invalid('ceremony: registration or authentication.');
    }
    await this.passkeys.putChallenge({
      id: challengeId(options.challenge),
      ceremony,
      userId: ceremony === 'registration' ? r.userId : null,
      binding: r.binding,
      ttlSeconds: CHALLENGE_SECONDS,
    });
    return JSON.stringify(options);
  }

  /**
   * Takes the challenge an answer carries, committed before anything else is checked (a refused
   * answer cannot be tried again): it must be live, of this ceremony, of this browser (and person).
   */
  private async take(challenge: string, ceremony: Ceremony, binding: string, userId?: string): Promise<void> {
    const c = await this.passkeys.takeChallenge(this.sql, challengeId(challenge));
    if (!c || c.ceremony !== ceremony || !sameText(c.binding, binding) || (userId !== undefined && c.user_id !== userId)) throw spent();
  }

  /** Verifies a registration and keeps the passkey; audited as passkey.registered. */
  async register(
    p: Principal,
    r: { userId: string; responseJson: string; party?: PasskeyParty; binding: string; name: string },
  ): Promise<PasskeyRow> {
    this.requireSystem(p);
    const party = checkParty(r.party);
    checkBinding(r.binding);
    await this.person(r.userId);
    const name = r.name.trim() ? parse(Name, r.name, 'invalid_name') : 'Passkey';
    const { answer, challenge } = answerOf<RegistrationResponseJSON>(r.responseJson);
    await this.take(challenge, 'registration', r.binding, r.userId);
    const { registrationInfo: info } = await verified(() => verifyRegistrationResponse({ ...expected(party, challenge), response: answer }));
    const row = await this.sql.tx(async (q) => {
      if ((await this.passkeys.countOf(q, r.userId)) >= MAX_PASSKEYS) {
        throw new DomainError('conflict', 'too_many_passkeys', `A person has at most ${MAX_PASSKEYS} passkeys.`);
      }
      const made = await this.passkeys.insert(q, {
        id: info.credential.id,
        userId: r.userId,
        name,
        publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
        counter: info.credential.counter,
        transports: (info.credential.transports ?? []).slice(0, 8),
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
        aaguid: info.aaguid,
      });
      if (!made) throw new DomainError('conflict', 'passkey_exists', 'This passkey is registered already.');
      await this.audit(q, {
        accountId: r.userId,
        action: 'passkey.registered',
        actor: personActor(r.userId),
        target: { kind: 'passkey', id: made.id },
        data: { passkeyId: made.id, name, deviceType: made.device_type, backedUp: made.backed_up, aaguid: info.aaguid },
      });
      return made;
    });
    this.kick();
    return row;
  }

  /**
   * Verifies a sign-in: the passkey must be known and its person's (the user handle the
   * authenticator returns names its owner), the answer of a live challenge of this browser, from
   * the origin, user verified, signed by its key, its counter ahead of the stored one (or both
   * zero, as synced passkeys keep it). Audited as passkey.signed_in; answers the person.
   */
  async signIn(p: Principal, r: { responseJson: string; party?: PasskeyParty; binding: string }): Promise<{ userId: string; passkeyId: string }> {
    this.requireSystem(p);
    const party = checkParty(r.party);
    checkBinding(r.binding);
    const { answer, challenge } = answerOf<AuthenticationResponseJSON>(r.responseJson);
    await this.take(challenge, 'authentication', r.binding);
    const key = await this.passkeys.byId(answer.id);
    if (!key) throw refused('passkey_unknown', 'This passkey is not registered here (or was removed).');
    const handle = typeof answer.response.userHandle === 'string' ? Buffer.from(answer.response.userHandle, 'base64url').toString('utf8') : '';
    if (handle !== key.user_id) throw refused('passkey_not_theirs', 'This passkey belongs to another person than the one it names.');
    const { authenticationInfo: info } = await verified(() =>
      verifyAuthenticationResponse({
        ...expected(party, challenge),
        response: answer,
        credential: { id: key.id, publicKey: Buffer.from(key.public_key, 'base64url'), counter: key.counter, transports: key.transports as never },
      }),
    );
    await this.sql.tx(async (q) => {
      const ok = await this.passkeys.used(q, {
        id: key.id,
        expectedCounter: key.counter,
        counter: info.newCounter,
        backedUp: info.credentialBackedUp,
      });
      if (!ok) throw refused('passkey_invalid', 'This passkey was used at the same time elsewhere: try again.');
      await this.audit(q, {
        accountId: key.user_id,
        action: 'passkey.signed_in',
        actor: personActor(key.user_id),
        target: { kind: 'passkey', id: key.id },
        data: { passkeyId: key.id, name: key.name, counter: info.newCounter, backedUp: info.credentialBackedUp },
      });
    });
    this.kick();
    return { userId: key.user_id, passkeyId: key.id };
  }

  async list(p: Principal, userId: string): Promise<PasskeyRow[]> {
    this.requireSystem(p);
    checkUser(userId);
    return this.passkeys.ofUser(userId, MAX_PASSKEYS);
  }

  /** Removes one of the person's passkeys (another's is left alone: false); audited as passkey.removed. */
  async remove(p: Principal, userId: string, passkeyId: string): Promise<boolean> {
    this.requireSystem(p);
    checkUser(userId);
    if (!passkeyId || passkeyId.length > 1024) throw invalid('passkeyId: 1 to 1024 characters.');
    const gone = await this.sql.tx(async (q) => {
      const row = await this.passkeys.delete(q, userId, passkeyId);
      if (!row) return false;
      await this.audit(q, {
        accountId: userId,
        action: 'passkey.removed',
        actor: personActor(userId),
        target: { kind: 'passkey', id: row.id },
        data: { passkeyId: row.id, name: row.name },
      });
      return true;
    });
    if (gone) this.kick();
    return gone;
  }

  /** Deletes expired challenges (a batch); called on the OAuth sweep's timer. */
  sweep(limit = 500): Promise<number> {
    return this.passkeys.sweep(limit);
  }
}
