import { z } from 'zod';

import {
  type Cache,
  DomainError,
  enqueueEvent,
  generateApiKey,
  hashSecret,
  keyPrefix,
  newId,
  type OutboxRelay,
  parseInput,
  type Principal,
  type Queryable,
  scopeIdProblem,
  type Sql,
  visibleName,
} from '@svc/kit';

import { capExpiry } from './lineage.js';
import { type KeyRow, KeyStore, SCHEMA } from './store.js';

/** How long a verification stays in the shared cache; revocation deletes it at once. */
export const VERIFY_CACHE_MS = 60_000;
/** Keys one account may create per minute. */
export const CREATE_LIMIT_PER_MINUTE = 60;

export const USAGE_COUNT_KEY = 'keys:usage:count';
export const USAGE_LAST_KEY = 'keys:usage:last';
export const verifyCacheKey = (hash: string) => `keys:verify:${hash}`;

const notFound = () => new DomainError('not_found', 'key_not_found', 'API key not found.');

/** A new key: its row, its plaintext (shown once), and whether its expiry was capped at its parent's. */
export interface Created {
  row: KeyRow;
  plaintext: string;
  capped: boolean;
}

export interface CreateInput {
  name: string;
  projectId?: string;
  expiresInDays?: number;
  /** The lifetime in whole minutes (the API's fractional `expiresInDays`); wins over expiresInDays. */
  expiresInMinutes?: number;
  agentId?: string;
}

/**
 * For whom keys are made, listed or revoked: the account they act in, the calling key (recorded
 * as creator or revoker) and its project scope. A principal is one; so is the explicit caller the
 * agents service names when it manages an agent's keys (AgentKeyCaller).
 */
export interface Acting {
  accountId: string;
  keyId?: string;
  projectId?: string;
}

/** The agent whose keys a system caller (the agents service) manages, for whom: checked by that caller. */
export interface AgentKeyCaller extends Acting {
  agentId: string;
}

export type Owner = { kind: 'human' | 'agent'; id: string };

/**
 * Who owns a new or listed key, given the principal and an optional agent id: an agent key's keys
 * are that agent's (it names itself, if anything); a person's are theirs. A person manages an
 * agent's keys through the agents service, which checks the agent is theirs and calls the
 * *AgentKey methods below.
 */
function ownerFor(p: Principal, agentId: string | undefined): Owner {
  if (p.kind === 'agent') {
    // An agent's key only ever makes keys of that same agent, never a person's.
    if (agentId && agentId !== p.agentId) throw new DomainError('not_found', 'agent_not_found', 'Agent not found.');
    return { kind: 'agent', id: p.agentId! };
  }
  if (p.kind !== 'human') throw new DomainError('forbidden', 'forbidden', 'This principal cannot manage API keys.');
  if (agentId) {
    throw new DomainError(
      'invalid_argument',
      'invalid_request',
      "agentId: an agent's keys are managed through the agents service (/agents/:id/keys).",
    );
  }
  return { kind: 'human', id: p.userId! };
}

/** A key's name: trimmed, NFC, 1–100 characters, no control or invisible format characters. */
export const KeyName = visibleName(z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters'));

/** A project-scoped key works inside its project only, and cannot make keys outside it. */
function projectFor(a: Acting, requested: string | undefined): string | undefined {
  // A key's project is a structured id (never a path), as grant scopes name it.
  const problem = requested ? scopeIdProblem(requested) : null;
  if (problem) throw new DomainError('invalid_argument', 'invalid_request', `projectId: ${problem}.`);
  if (a.projectId && requested && requested !== a.projectId) {
    throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${a.projectId}.`);
  }
  return a.projectId ?? requested;
}

interface ListInput {
  projectId?: string;
  limit: number;
  cursor?: string;
}

/** People see their own keys; owners and admins of an organization see every member's. */
export function keySees(p: Principal, row: KeyRow): boolean {
  if (row.account_id !== p.accountId) return false;
  if (p.projectId && row.project_id !== p.projectId) return false;
  if (p.kind === 'agent') return row.owner_kind === 'agent' && row.owner_id === p.agentId;
  if (row.owner_kind === 'agent') return true; // agents of the account are managed by its people
  return row.owner_id === p.userId || p.role === 'owner' || p.role === 'admin';
}

export class KeysDomain {
  readonly store: KeyStore;

  /** When this replica last saw the shared cache fail (ms; 0: never). */
  private cacheFailedAt = 0;

  constructor(
    private readonly sql: Sql,
    private readonly cache: Cache,
    private readonly outbox: () => OutboxRelay | undefined,
  ) {
    this.store = new KeyStore(sql);
  }

  async create(p: Principal, input: CreateInput): Promise<Created> {
    return this.insert(p, ownerFor(p, input.agentId), { ...input, name: parseInput(KeyName, input.name, { where: 'name' }) });
  }

  /** A key of the agent, for the agents service (which has checked the caller may manage the agent's keys). */
  async createAgentKey(c: AgentKeyCaller, input: Omit<CreateInput, 'agentId'>): Promise<Created> {
    return this.insert(c, { kind: 'agent', id: c.agentId }, { ...input, name: parseInput(KeyName, input.name, { where: 'name' }) });
  }

  /**
   * Inserts a key created from `lineage.parent` (default: the calling key). Lineage is
   * authority: the new key's expiry is capped at its parent's (a later one, or none, gets the
   * parent's, and `capped` says so), and a parent that is revoked or expired creates nothing.
   * `lineage.expiresAt` gives the expiry outright (rotation keeps the old key's).
   */
  async insert(
    a: Acting,
    owner: Owner,
    input: Omit<CreateInput, 'agentId'>,
    lineage: { parent?: string | null; expiresAt?: Date | null } = {},
  ): Promise<Created> {
    const projectId = projectFor(a, input.projectId);
    // Without the cache the creation limit cannot count: creation goes on (a limiter outage is not an API outage).
    const attempts = await this.cache.hit(`keys:create:${a.accountId}`, 60_000).catch(() => 0);
    if (attempts > CREATE_LIMIT_PER_MINUTE) {
      throw new DomainError('rate_limited', 'rate_limited', 'Too many keys created for this account; try again in a minute.', {
        retryAfterSeconds: 60,
      });
    }
    const plaintext = generateApiKey();
    const lifetimeMs = input.expiresInMinutes ? input.expiresInMinutes * 60_000 : input.expiresInDays ? input.expiresInDays * 86_400_000 : 0;
    const asked = lineage.expiresAt !== undefined ? lineage.expiresAt : lifetimeMs ? new Date(Date.now() + lifetimeMs) : null;
    const parentId = lineage.parent !== undefined ? lineage.parent : (a.keyId ?? null);
    let capped = false;
    const row = await this.sql.tx(async (q) => {
      let expiresAt = asked;
      if (parentId) {
        const parent = await this.store.parentForCreate(q, parentId);
        if (!parent || parent.revoked_at || (parent.expires_at && parent.expires_at.getTime() <= Date.now())) throw invalidKey();
        ({ expiresAt, capped } = capExpiry(asked, parent.expires_at));
      }
      const r = await this.store.insert(q, {
        id: newId('key'),
        key_hash: hashSecret(plaintext),
        prefix: keyPrefix(plaintext),
        name: input.name,
        account_id: a.accountId,
        owner_kind: owner.kind,
        owner_id: owner.id,
        project_id: projectId ?? null,
        created_by_key_id: parentId,
        expires_at: expiresAt,
      });
      await enqueueEvent(q, SCHEMA, { subject: 'keys.key.created', accountId: a.accountId, data: publicView(r) });
      return r;
    });
    this.outbox()?.kick();
    return { row, plaintext, capped };
  }

  async list(p: Principal, input: ListInput & { agentId?: string }): Promise<{ rows: KeyRow[]; nextCursor?: string }> {
    const owner = p.kind === 'agent' || input.agentId ? ownerFor(p, input.agentId) : null;
    const privileged = p.role === 'owner' || p.role === 'admin' || p.accountId === p.userId;
    return this.page(p, { kind: owner?.kind ?? 'human', id: owner?.id ?? (privileged ? undefined : p.userId) }, input);
  }

  /** The agent's active keys, for the agents service. */
  async listAgentKeys(c: AgentKeyCaller, input: ListInput): Promise<{ rows: KeyRow[]; nextCursor?: string }> {
    return this.page(c, { kind: 'agent', id: c.agentId }, input);
  }

  /** Active keys of the acting account, of one owner kind (and owner, when given). */
  private async page(a: Acting, owner: { kind: 'human' | 'agent'; id?: string }, input: ListInput): Promise<{ rows: KeyRow[]; nextCursor?: string }> {
    const projectId = projectFor(a, input.projectId);
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    const before = input.cursor ? decodeCursor(input.cursor) : undefined;
    const rows = await this.store.listActive({
      accountId: a.accountId,
      ownerKind: owner.kind,
      ownerId: owner.id,
      projectId,
      before,
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined };
  }

  /**
   * Revokes at once, with every key created from it down the tree: the rows, the shared
   * verification cache, and an event per key that every gateway hears. Returns the ids revoked.
   */
  async revoke(p: Principal, input: { id: string; agentId?: string }): Promise<string[]> {
    if (input.agentId || p.kind === 'agent') ownerFor(p, input.agentId);
    return this.revokeIf(p, input.id, (row) => keySees(p, row));
  }

  /** Revokes a key of the agent (and the keys made from it), for the agents service; another agent's key, or one outside the caller's project, is not found. */
  async revokeAgentKey(c: AgentKeyCaller, id: string): Promise<string[]> {
    return this.revokeIf(
      c,
      id,
      (row) => (!c.projectId || row.project_id === c.projectId) && row.owner_kind === 'agent' && row.owner_id === c.agentId,
    );
  }

  private async revokeIf(a: Acting, id: string, visible: (row: KeyRow) => boolean): Promise<string[]> {
    const rows = await this.sql.tx(async (q) => {
      const row = await this.store.byId(q, id, a.accountId);
      if (!row || !visible(row)) throw notFound();
      // A retried revocation revokes nothing new, but still finishes the tree below (keys made
      // from it before lineage was enforced).
      if (!row.revoked_at) await this.store.markRevoked(q, row.id);
      const revoked = [...(row.revoked_at ? [] : [row]), ...(await this.store.revokeDescendants(q, [row.id]))];
      await this.announceRevoked(q, revoked, a.keyId, row.id);
      return revoked;
    });
    await this.forgetRevoked(rows);
    return rows.map((r) => r.id);
  }

  /** One keys.key.revoked event per key, in the revoking transaction; `via` names the key whose revocation took the others along. */
  private async announceRevoked(q: Queryable, rows: KeyRow[], byKeyId: string | undefined, via?: string): Promise<void> {
    for (const r of rows) {
      await enqueueEvent(q, SCHEMA, {
        subject: 'keys.key.revoked',
        accountId: r.account_id,
        data: { id: r.id, prefix: r.prefix, revokedByKeyId: byKeyId ?? null, ...(via && via !== r.id ? { viaKeyId: via } : {}) },
      });
    }
  }

  /**
   * Drops revoked keys from the shared verification cache and sends their events. The committed
   * revocation stands even if the delete fails: the durable consumer of keys.key.revoked
   * (forgetVerification) deletes each entry again until it succeeds.
   */
  private async forgetRevoked(rows: KeyRow[]): Promise<void> {
    if (rows.length) await this.cache.del(...rows.map((r) => verifyCacheKey(r.key_hash))).catch(() => {});
    this.outbox()?.kick();
  }

  /** Drops the shared verification cache entry of a revoked key (idempotent). */
  async forgetVerification(keyId: string): Promise<void> {
    const hash = await this.store.hashById(keyId);
    if (hash) await this.cache.del(verifyCacheKey(hash));
  }

  /** Revokes every key of an owner (an agent being deleted), and the keys made from them. */
  async revokeOwner(p: Principal, ownerKind: string, ownerId: string): Promise<number> {
    if (p.kind !== 'system' && p.kind !== 'human') throw new DomainError('forbidden', 'forbidden', 'Not allowed.');
    const rows = await this.sql.tx(async (q) => {
      const own = await this.store.revokeOwner(q, ownerKind, ownerId, p.kind === 'system' ? undefined : p.accountId);
      const revoked = [
        ...own,
        ...(await this.store.revokeDescendants(
          q,
          own.map((r) => r.id),
        )),
      ];
      await this.announceRevoked(q, revoked, p.keyId);
      return revoked;
    });
    await this.forgetRevoked(rows);
    return rows.length;
  }

  /**
   * The key for a hash, if it exists and is usable now. Cached in the shared cache; without the
   * cache (Redis down) it is read from the database, the truth, so a revocation made during the
   * outage holds. An entry cached before this replica last saw the cache fail is not trusted: a
   * revocation's delete of it may have failed in the outage (the durable consumer of
   * keys.key.revoked deletes it again once the cache is back).
   */
  async verify(hash: string): Promise<KeyRow> {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw invalidKey();
    let row: KeyRow | null = null;
    const cached = await this.cache.get(verifyCacheKey(hash)).catch(() => void (this.cacheFailedAt = Date.now()));
    if (cached) {
      const { cachedAt, ...entry } = JSON.parse(cached) as Record<string, unknown> & { cachedAt?: number };
      if ((cachedAt ?? 0) > this.cacheFailedAt) row = reviveRow(entry);
    }
    if (!row) {
      row = await this.store.byHash(hash);
      if (row && !row.revoked_at) {
        await this.cache
          .set(verifyCacheKey(hash), JSON.stringify({ ...row, cachedAt: Date.now() }), VERIFY_CACHE_MS)
          .catch(() => void (this.cacheFailedAt = Date.now()));
      }
    }
    if (!row || row.revoked_at || (row.expires_at && row.expires_at.getTime() <= Date.now())) throw invalidKey();
    return row;
  }

  async import(input: { keyHash: string; prefix: string; name: string; accountId: string; ownerKind: string; ownerId: string }) {
    if (!/^[0-9a-f]{64}$/.test(input.keyHash)) throw new DomainError('invalid_argument', 'invalid_key_hash', 'Bad key hash.');
    if (input.ownerKind !== 'human' && input.ownerKind !== 'agent') {
      throw new DomainError('invalid_argument', 'invalid_owner', 'Owner kind must be human or agent.');
    }
    return this.sql.tx((q) =>
      this.store.insertIfAbsent(q, {
        id: newId('key'),
        key_hash: input.keyHash,
        prefix: input.prefix,
        name: input.name,
        account_id: input.accountId,
        owner_kind: input.ownerKind as 'human' | 'agent',
        owner_id: input.ownerId,
        project_id: null,
        created_by_key_id: null,
        expires_at: null,
      }),
    );
  }

  /**
   * Moves usage counted by gateways (in the cache) into PostgreSQL: one UPDATE per flush for all
   * keys, not one per request. A failed write puts the counts back.
   */
  async flushUsage(): Promise<number> {
    const counts = await this.cache.hdrain(USAGE_COUNT_KEY);
    const lasts = await this.cache.hdrain(USAGE_LAST_KEY);
    const ids = new Set([...Object.keys(counts), ...Object.keys(lasts)]);
    const usage = [...ids].map((id) => ({
      id,
      count: Number(counts[id] ?? 0),
      lastUsedAt: lasts[id] ? new Date(Number(lasts[id])) : null,
    }));
    try {
      await this.store.addUsage(usage);
    } catch (err) {
      for (const u of usage) {
        if (u.count) await this.cache.hincrby(USAGE_COUNT_KEY, u.id, u.count);
        if (u.lastUsedAt) await this.cache.hmax(USAGE_LAST_KEY, { [u.id]: u.lastUsedAt.getTime() });
      }
      throw err;
    }
    return usage.length;
  }
}

const invalidKey = () => new DomainError('unauthenticated', 'invalid_api_key', 'The API key is invalid, expired or revoked.');

function reviveRow(r: Record<string, unknown>): KeyRow {
  const d = (v: unknown) => (v ? new Date(v as string) : null);
  return {
    ...(r as unknown as KeyRow),
    expires_at: d(r.expires_at),
    revoked_at: d(r.revoked_at),
    last_used_at: d(r.last_used_at),
    created_at: new Date(r.created_at as string),
  };
}

/** What events and logs may say about a key: never the hash, never the plaintext. */
export function publicView(r: KeyRow) {
  return {
    id: r.id,
    prefix: r.prefix,
    name: r.name,
    ownerKind: r.owner_kind,
    ownerId: r.owner_id,
    projectId: r.project_id,
    createdByKeyId: r.created_by_key_id,
    expiresAt: r.expires_at?.toISOString() ?? null,
  };
}

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string): string {
  const id = Buffer.from(c, 'base64url').toString();
  if (!/^key_[0-9a-z]{26}$/.test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}
