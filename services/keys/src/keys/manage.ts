import { type Cache, DomainError, enqueueEvent, type OutboxRelay, parseInput, type Principal, type Sql } from '@svc/kit';

import { type AgentKeyCaller, KeyName as Name, type KeysDomain, keySees, verifyCacheKey } from './keys.js';
import { type KeyRow, SCHEMA } from './store.js';

/**
 * One key at a time (docs/keys.md): its details (revoked ones too), renaming it, the calling key
 * itself, the revoked keys. Visibility is the keys list's (keySees): any other key is not found.
 */

const KEY_ID_RE = /^key_[0-9a-z]{26}$/;
const notFound = () => new DomainError('not_found', 'key_not_found', 'API key not found.');

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string | undefined): string | undefined {
  if (!c) return undefined;
  const id = Buffer.from(c, 'base64url').toString();
  if (!KEY_ID_RE.test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}

const agentSees = (c: AgentKeyCaller) => (row: KeyRow) =>
  (!c.projectId || row.project_id === c.projectId) && row.owner_kind === 'agent' && row.owner_id === c.agentId;

export class KeyOps {
  constructor(
    private readonly keys: KeysDomain,
    private readonly sql: Sql,
    private readonly cache: Cache,
    private readonly outbox: () => OutboxRelay | undefined,
  ) {}

  private async visible(accountId: string, id: string, sees: (row: KeyRow) => boolean): Promise<KeyRow> {
    const row = KEY_ID_RE.test(id) ? await this.keys.store.byId(this.sql, id, accountId) : null;
    if (!row || !sees(row)) throw notFound();
    return row;
  }

  async get(p: Principal, id: string): Promise<KeyRow> {
    if (p.kind !== 'human' && p.kind !== 'agent') throw new DomainError('forbidden', 'forbidden', 'This principal has no API keys.');
    return this.visible(p.accountId, id, (row) => keySees(p, row));
  }

  async current(p: Principal): Promise<KeyRow> {
    if (!p.keyId) throw new DomainError('not_found', 'key_not_found', 'This request was not made with an API key.');
    const row = await this.keys.store.byId(this.sql, p.keyId, p.accountId);
    if (!row) throw notFound();
    return row;
  }

  async rename(p: Principal, id: string, name: string): Promise<KeyRow> {
    const n = parseInput(Name, name ?? '', { where: 'name' });
    await this.get(p, id);
    return this.renameIf(p.accountId, id, n, (row) => keySees(p, row), p.keyId ?? null);
  }

  /**
   * Replaces one of the caller's own keys: a new key with its name, project and expiry, then the
   * old one revoked with the keys made from it (a failed revocation leaves both: revoking again
   * finishes it). Rotated by itself, the new key takes the old one's place in the lineage (made
   * from the same parent); rotated by another key, it is that key's child, capped at its expiry. A
   * key made from the one it rotates is refused: the rotation would revoke it, and the new key with it.
   */
  async rotate(
    p: Principal,
    id: string,
  ): Promise<{ row: KeyRow; plaintext: string; capped: boolean; revokedKeyId: string; revokedKeyIds: string[] }> {
    const old = await this.get(p, id);
    const own =
      p.kind === 'agent' ? old.owner_kind === 'agent' && old.owner_id === p.agentId : old.owner_kind === 'human' && old.owner_id === p.userId;
    if (!own) throw new DomainError('forbidden', 'key_owner_required', 'Only the key’s owner rotates it: revoke it, and its owner makes a new one.');
    if (old.revoked_at) throw new DomainError('conflict', 'key_revoked', 'The key is revoked: it cannot change.');
    if (old.expires_at && old.expires_at.getTime() <= Date.now())
      throw new DomainError('conflict', 'key_expired', 'The key has expired: make a new one.');
    const self = p.keyId === old.id;
    if (!self && p.keyId && (await this.keys.store.descendsFrom(p.keyId, old.id))) {
      throw new DomainError(
        'conflict',
        'key_in_lineage',
        'This key was made from the key it would rotate, and rotating revokes every key made from it: rotate it with the key itself, or with a key outside its lineage.',
      );
    }
    const made = await this.keys.insert(
      p,
      { kind: old.owner_kind, id: old.owner_id },
      { name: old.name, projectId: old.project_id ?? undefined },
      { parent: self ? old.created_by_key_id : (p.keyId ?? null), expiresAt: old.expires_at },
    );
    const revokedKeyIds = await this.keys.revoke(p, { id: old.id });
    return { ...made, revokedKeyId: old.id, revokedKeyIds };
  }

  async getAgentKey(c: AgentKeyCaller, id: string): Promise<KeyRow> {
    return this.visible(c.accountId, id, agentSees(c));
  }

  async renameAgentKey(c: AgentKeyCaller, id: string, name: string): Promise<KeyRow> {
    const n = parseInput(Name, name ?? '', { where: 'name' });
    return this.renameIf(c.accountId, id, n, agentSees(c), c.keyId ?? null);
  }

  private async renameIf(accountId: string, id: string, name: string, sees: (row: KeyRow) => boolean, byKeyId: string | null): Promise<KeyRow> {
    const row = await this.sql.tx(async (q) => {
      const r = KEY_ID_RE.test(id) ? await this.keys.store.byId(q, id, accountId) : null;
      if (!r || !sees(r)) throw notFound();
      if (r.revoked_at) throw new DomainError('conflict', 'key_revoked', 'The key is revoked: it cannot change.');
      if (r.name === name) return r;
      const next = await this.keys.store.rename(q, id, name);
      await enqueueEvent(q, SCHEMA, { subject: 'keys.key.renamed', accountId, data: { id, prefix: r.prefix, name, renamedByKeyId: byKeyId } });
      return next;
    });
    // The verification cache holds the row: the next request reads the new name.
    await this.cache.del(verifyCacheKey(row.key_hash)).catch(() => {});
    this.outbox()?.kick();
    return row;
  }

  /** The revoked keys the caller sees, most recent first: its own (a person with the owner or admin role: every person's). */
  async revoked(p: Principal, input: { limit?: number; cursor?: string; projectId?: string }): Promise<{ rows: KeyRow[]; nextCursor?: string }> {
    if (p.kind !== 'human' && p.kind !== 'agent') throw new DomainError('forbidden', 'forbidden', 'This principal has no API keys.');
    if (p.projectId && input.projectId && input.projectId !== p.projectId) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}.`);
    }
    const privileged = p.role === 'owner' || p.role === 'admin' || p.accountId === p.userId;
    const limit = Math.min(Math.max(input.limit || 50, 1), 200);
    const rows = await this.keys.store.listRevoked({
      accountId: p.accountId,
      ownerKind: p.kind === 'agent' ? 'agent' : 'human',
      ownerId: p.kind === 'agent' ? p.agentId : privileged ? undefined : p.userId,
      projectId: p.projectId ?? input.projectId,
      before: decodeCursor(input.cursor),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined };
  }
}
