import {
  type Actor,
  actorOf,
  DomainError,
  enqueueEvent,
  type Envelope,
  type Kek,
  localKeks,
  type Principal,
  requireAuthority,
  type Sql,
} from '@svc/kit';

import { SCHEMA } from './store.js';

/**
 * Credentials an account keeps for an external venue (an Alpaca key id and secret): sealed with the
 * kit's Envelope under the trading service's KEKs (associated data `<account>/<venue>`), never
 * returned (the key id masked, the secret's last four characters), set and deleted by a person
 * through the API only — the pattern of the models service's provider keys.
 */

export const KEK_FILE = 'trading-kek';
const FIELD_MAX = 200;

export interface CredentialRow {
  account_id: string;
  venue: string;
  key_id: string;
  sealed_secret: string;
  last4: string;
  set_by: Actor;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'account_id, venue, key_id, sealed_secret, last4, set_by, created_at, updated_at';
const row = (r: CredentialRow): CredentialRow => ({ ...r, set_by: typeof r.set_by === 'string' ? JSON.parse(r.set_by) : r.set_by });
const aad = (accountId: string, venue: string) => `${accountId}/${venue}`;
const mask = (s: string) => `…${s.slice(-4)}`;

/** SVC_TRADING_KEK, or one generated once into <SVC_DATA_DIR>/trading-kek (0600). */
export const credentialKeks = (configured: Kek[] | undefined, dataDir: string) => localKeks(configured, dataDir, KEK_FILE, 'the trading service');

export class VenueCredentials {
  constructor(
    private readonly deps: {
      sql: Sql;
      envelope: Envelope;
      /** The external venues credentials may be stored for. */
      venues: string[];
      kick(): void;
    },
  ) {}

  private venue(v: string): string {
    if (!this.deps.venues.includes(v))
      throw new DomainError('invalid_argument', 'unknown_venue', `venue must be one of ${this.deps.venues.map((x) => `"${x}"`).join(', ')}.`);
    return v;
  }

  private manage(p: Principal): void {
    requireAuthority(p, 'Venue credentials are set');
    if (p.role !== undefined && p.role !== 'owner' && p.role !== 'admin')
      throw new DomainError('forbidden', 'insufficient_role', "An organization's venue credentials are managed by its owners and admins.");
  }

  async set(p: Principal, input: { venue: string; keyId: string; secretKey: string }): Promise<CredentialRow> {
    this.manage(p);
    const venue = this.venue(input.venue);
    for (const [field, v] of [
      ['keyId', input.keyId],
      ['secretKey', input.secretKey],
    ] as const) {
      if (!v || v.length > FIELD_MAX || /\s/.test(v))
        throw new DomainError('invalid_argument', 'invalid_request', `${field}: must be 1 to ${FIELD_MAX} characters without whitespace.`);
    }
    const sealed = this.deps.envelope.seal(JSON.stringify({ keyId: input.keyId, secretKey: input.secretKey }), aad(p.accountId, venue));
    const actor = actorOf(p);
    const saved = await this.deps.sql.tx(async (q) => {
      const rows = await q.query<CredentialRow>(
        `INSERT INTO trading.credentials (account_id, venue, key_id, sealed_secret, last4, set_by) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
         ON CONFLICT (account_id, venue) DO UPDATE SET key_id = EXCLUDED.key_id, sealed_secret = EXCLUDED.sealed_secret,
           last4 = EXCLUDED.last4, set_by = EXCLUDED.set_by, updated_at = now()
         RETURNING ${COLUMNS}`,
        [p.accountId, venue, mask(input.keyId), sealed, input.secretKey.slice(-4), JSON.stringify(actor)],
      );
      const r = row(rows[0]!);
      await enqueueEvent(q, SCHEMA, { subject: 'trading.credentials.set', accountId: p.accountId, data: { venue, keyId: r.key_id, actor } });
      return r;
    });
    this.deps.kick();
    return saved;
  }

  async list(p: Principal): Promise<CredentialRow[]> {
    const rows = await this.deps.sql.query<CredentialRow>(`SELECT ${COLUMNS} FROM trading.credentials WHERE account_id = $1 ORDER BY venue`, [
      p.accountId,
    ]);
    return rows.map(row);
  }

  async remove(p: Principal, venue: string): Promise<void> {
    this.manage(p);
    this.venue(venue);
    await this.deps.sql.tx(async (q) => {
      const gone = await q.query(`DELETE FROM trading.credentials WHERE account_id = $1 AND venue = $2 RETURNING venue`, [p.accountId, venue]);
      if (!gone.length) throw new DomainError('not_found', 'credentials_not_found', `The account has no credentials for ${venue}.`);
      await enqueueEvent(q, SCHEMA, { subject: 'trading.credentials.deleted', accountId: p.accountId, data: { venue, actor: actorOf(p) } });
    });
    this.deps.kick();
  }

  /** The plaintext credentials, for the venue adapter only (no route answers them); null when none are stored. */
  async open(accountId: string, venue: string): Promise<{ keyId: string; secretKey: string } | null> {
    const rows = await this.deps.sql.query<CredentialRow>(`SELECT ${COLUMNS} FROM trading.credentials WHERE account_id = $1 AND venue = $2`, [
      accountId,
      venue,
    ]);
    if (!rows[0]) return null;
    return JSON.parse(this.deps.envelope.open(rows[0].sealed_secret, aad(accountId, venue))) as { keyId: string; secretKey: string };
  }
}
