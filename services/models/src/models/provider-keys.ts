import {
  actorOf,
  checkOutboundUrl,
  DomainError,
  enqueueEvent,
  type Envelope,
  type Kek,
  localKeks,
  type Principal,
  requireAuthority,
  type Sql,
} from '@svc/kit';

import { type Catalogue, FIRST_PARTY_PROVIDER } from './catalogue.js';
import { type ProviderKeyRow, ProviderKeyStore, SCHEMA } from './store.js';

/**
 * Provider keys (docs/models.md): an account's (or an organization's) own keys for the model
 * providers, which make the providers' models available to everyone acting in that account. The key
 * is sealed with the kit's Envelope under the models service's KEKs; only its last four characters
 * are kept readable. A custom `baseUrl` must reach a public address (or one the operator allows).
 */

/** A provider that speaks the OpenAI API at a base URL of the account's choosing. */
export const OPENAI_COMPATIBLE = 'openai-compatible';
export const KEK_FILE = 'models-kek';

const KEY_MAX = 500;

export interface ProviderKeysDeps {
  sql: Sql;
  envelope: Envelope;
  /** The providers a key may be set for: the catalogue's (but the platform's own) and openai-compatible. */
  providers: string[];
  /** Hosts and networks a baseUrl may reach although not public (SVC_MODELS_ALLOWED_HOSTS). */
  allowedHosts: string[];
  /** How names resolve (tests); default the system resolver. */
  lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
  kick(): void;
}

/** The providers a key may be set for: the catalogue's (but the platform's own) and openai-compatible. */
export const keyProviders = (c: Catalogue): string[] => [
  ...new Set(c.models.map((m) => m.provider).filter((p) => p !== FIRST_PARTY_PROVIDER)),
  OPENAI_COMPATIBLE,
];

export const sealAad = (accountId: string, provider: string) => `${accountId}/${provider}`;

/** Setting or deleting a key changes authority: a person, through the API, with standing to manage the account. */
function requireManage(p: Principal): void {
  requireAuthority(p, 'Provider keys are set');
  if (p.projectId) {
    throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}; provider keys are account-wide.`);
  }
  if (p.role !== undefined && p.role !== 'owner' && p.role !== 'admin') {
    throw new DomainError('forbidden', 'insufficient_role', "An organization's provider keys are managed by its owners and admins.");
  }
}

const invalid = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

/** SVC_MODELS_KEK, or one generated once into <SVC_DATA_DIR>/models-kek (0600). */
export const providerKeyKeks = (configured: Kek[] | undefined, dataDir: string) => localKeks(configured, dataDir, KEK_FILE, 'the models service');

export class ProviderKeys {
  readonly store: ProviderKeyStore;

  constructor(private readonly deps: ProviderKeysDeps) {
    this.store = new ProviderKeyStore(deps.sql);
  }

  private provider(name: string): string {
    if (!this.deps.providers.includes(name)) {
      throw new DomainError(
        'invalid_argument',
        'unknown_provider',
        `provider must be one of ${this.deps.providers.map((x) => `"${x}"`).join(', ')}.`,
      );
    }
    return name;
  }

  /** Sets (or replaces) the acting account's key for a provider. */
  async set(p: Principal, input: { provider: string; key: string; baseUrl?: string }): Promise<ProviderKeyRow> {
    requireManage(p);
    const provider = this.provider(input.provider);
    const key = input.key;
    if (!key || key.length > KEY_MAX || /\s/.test(key)) throw invalid(`key: must be 1 to ${KEY_MAX} characters without whitespace.`);
    if (provider === OPENAI_COMPATIBLE && !input.baseUrl) throw invalid(`baseUrl: is required for ${OPENAI_COMPATIBLE}.`);
    let baseUrl: string | null = null;
    if (input.baseUrl) {
      const checked = await checkOutboundUrl(input.baseUrl, { allow: this.deps.allowedHosts, lookup: this.deps.lookup });
      baseUrl = checked.url.toString();
    }
    const accountId = p.accountId;
    const sealed = this.deps.envelope.seal(key, sealAad(accountId, provider));
    const row = await this.deps.sql.tx(async (q) => {
      const saved = await this.store.upsert(q, {
        account_id: accountId,
        provider,
        sealed_key: sealed,
        last4: key.slice(-4),
        base_url: baseUrl,
        set_by: actorOf(p),
      });
      await enqueueEvent(q, SCHEMA, { subject: 'models.provider_key.set', accountId, data: eventData(saved) });
      return saved;
    });
    this.deps.kick();
    return row;
  }

  /** The acting account's keys (last four characters only). */
  async list(p: Principal): Promise<ProviderKeyRow[]> {
    return this.store.list(p.accountId);
  }

  async remove(p: Principal, provider: string): Promise<void> {
    requireManage(p);
    this.provider(provider);
    await this.deps.sql.tx(async (q) => {
      const gone = await this.store.remove(q, p.accountId, provider);
      if (!gone) throw new DomainError('not_found', 'provider_key_not_found', `The account has no key for ${provider}.`);
      await enqueueEvent(q, SCHEMA, {
        subject: 'models.provider_key.deleted',
        accountId: p.accountId,
        data: { ...eventData(gone), actor: actorOf(p) },
      });
    });
    this.deps.kick();
  }

  /** The providers the acting account has a key for. */
  providersOf(p: Principal): Promise<Set<string>> {
    return this.store.providers(p.accountId);
  }

  /** The plaintext key, for the inference adapters (not exposed by any route). */
  open(row: ProviderKeyRow): string {
    return this.deps.envelope.open(row.sealed_key, sealAad(row.account_id, row.provider));
  }

  /** Re-wraps every key not wrapped with the current KEK (after a rotation); the count re-wrapped. */
  async rewrapAll(): Promise<number> {
    const { envelope } = this.deps;
    let after: { accountId: string; provider: string } | null = null;
    let n = 0;
    for (;;) {
      const rows = await this.store.page(after, 200);
      if (!rows.length) return n;
      for (const r of rows) {
        if (envelope.isCurrent(r.sealed_key)) continue;
        await this.store.replaceSealed(r.account_id, r.provider, r.sealed_key, envelope.rewrap(r.sealed_key, sealAad(r.account_id, r.provider)));
        n++;
      }
      const last = rows[rows.length - 1]!;
      after = { accountId: last.account_id, provider: last.provider };
    }
  }
}

/** What events say of a key: never the key. */
function eventData(r: ProviderKeyRow) {
  return { provider: r.provider, last4: r.last4, baseUrl: r.base_url, actor: r.set_by };
}
