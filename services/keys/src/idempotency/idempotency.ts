import { randomBytes } from 'node:crypto';

import { DomainError, type Principal, type Sql } from '@svc/kit';

import { IdempotencyStore, type RecordedAnswer, type Scope } from './store.js';

export interface IdempotencySettings {
  /** How long a key's answer is kept (and the key bound to its request), from its first use. */
  ttlSeconds: number;
  /** How long a claim holds while its request runs; past it, the same request may take the key over. */
  leaseSeconds: number;
}

/** Printable ASCII without spaces, as Stripe's keys (UUIDs, random strings) are. */
const KEY_RE = /^[\x21-\x7e]{1,255}$/;
const FINGERPRINT_RE = /^[0-9a-f]{64}$/;
const SWEEP_BATCH = 1000;

export type Begun = { claim: string } | { answer: RecordedAnswer };

/**
 * Idempotency-Key records (Stripe's rules): the first request with a key claims it, and its answer,
 * whatever it was, is recorded and replayed to every later request with the same key and the same
 * fingerprint for `ttlSeconds`. Another request with the key is refused (422), and so is the same
 * one while the first still runs (409). Keys are per acting account and API key.
 */
export class IdempotencyRecords {
  private readonly store: IdempotencyStore;

  constructor(
    sql: Sql,
    private readonly settings: IdempotencySettings,
  ) {
    this.store = new IdempotencyStore(sql);
  }

  async begin(p: Principal, key: string, fingerprint: string): Promise<Begun> {
    const scope = scopeOf(p, key);
    if (!FINGERPRINT_RE.test(fingerprint)) throw new DomainError('invalid_argument', 'invalid_request', 'fingerprint: must be a SHA-256 in hex.');
    // Claim, or read what holds the key; a record that goes between the two (released, swept) is
    // claimed on the next round.
    for (let attempt = 0; attempt < 3; attempt++) {
      const claim = randomBytes(16).toString('hex');
      if (await this.store.claim(scope, fingerprint, claim, this.settings.ttlSeconds, this.settings.leaseSeconds)) return { claim };
      const row = await this.store.get(scope);
      if (!row) continue;
      if (row.fingerprint !== fingerprint) {
        throw new DomainError(
          'unprocessable',
          'idempotency_key_reused',
          'This Idempotency-Key was already used with another request (method, path, query or body); use a new key for a new request.',
        );
      }
      if (row.claim !== null || row.status === null) {
        throw new DomainError(
          'conflict',
          'idempotency_key_in_use',
          'A request with this Idempotency-Key is still running; retry once it has finished.',
          {
            retryAfterSeconds: 1,
          },
        );
      }
      return {
        answer: { status: row.status, headers: row.headers ?? {}, body: row.body ?? Buffer.alloc(0), contentSha256: row.content_sha256 ?? '' },
      };
    }
    throw new DomainError('unavailable', 'idempotency_unavailable', 'The Idempotency-Key could not be claimed; try again.', { retryAfterSeconds: 1 });
  }

  /** Records the claimed request's answer, or (no answer) releases the key. */
  async finish(p: Principal, key: string, claim: string, answer: RecordedAnswer | undefined): Promise<void> {
    const scope = scopeOf(p, key);
    if (!answer) return this.store.release(scope, claim);
    if (!Number.isInteger(answer.status) || answer.status < 100 || answer.status > 599) {
      throw new DomainError('invalid_argument', 'invalid_request', 'answer.status: must be an HTTP status.');
    }
    if (answer.contentSha256 && !FINGERPRINT_RE.test(answer.contentSha256)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'answer.contentSha256: must be a SHA-256 in hex.');
    }
    // A claim taken over after its lease ran out: the request that now holds the key records its own.
    await this.store.finish(scope, claim, answer);
  }

  /** Deletes every expired record, in batches; returns how many. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.store.sweep(SWEEP_BATCH);
      total += n;
      if (n < SWEEP_BATCH) return total;
    }
  }
}

function scopeOf(p: Principal, key: string): Scope {
  if (!KEY_RE.test(key)) {
    throw new DomainError('invalid_argument', 'invalid_idempotency_key', 'Idempotency-Key: must be 1-255 printable ASCII characters without spaces.');
  }
  const keyId = p.keyId ?? (p.kind === 'host' ? p.hostId : undefined);
  if (!keyId || p.kind === 'system') throw new DomainError('forbidden', 'forbidden', 'Idempotency keys belong to API keys.');
  return { accountId: p.accountId, keyId, key };
}
