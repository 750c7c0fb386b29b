import {
  type Bus,
  BusRequestError,
  DomainError,
  enqueueEvent,
  generateApiKey,
  generateHostCredential,
  hashSecret,
  keyPrefix,
  newId,
  type OutboxRelay,
  parseInput,
  type Principal,
  type Queryable,
} from '@svc/kit';
import type { KeysClient } from '@svc/clients';
import type { JWK } from 'jose';
import { z } from 'zod';

import {
  ACCOUNT_ID_RE,
  accountNotFound,
  actorOf,
  AGENT_ID_RE,
  canChangeAuthority,
  GRANT_ID_RE,
  HOST_ID_RE,
  projectScope,
  requireAccountWide,
  requireAuthority,
  requireManager,
  scopeWithin,
  type Standing,
  SYSTEM_ACTOR,
  verbCovers,
} from './access.js';
import { AgentDirectory } from './directory.js';
import { checkIfMatch, DEFAULT_SETTINGS, mergePatch, type Settings, settingsEtag, validateSettings, canonicalJson } from './settings.js';
import { generateSigningKey, type KeyVault, kidOf, privateKeyFrom, sealAad, signCompact, verifyCompact } from './signing.js';
import {
  type AccountRow,
  type Actor,
  type AuditRow,
  AccountStore,
  type GrantRow,
  type HostRow,
  type MemberRow,
  type Role,
  SCHEMA,
  type SigningKeyRow,
} from './store.js';

/** Longest a host call may wait: below the gateway's gRPC deadline (10 s by default). */
export const MAX_HOST_CALL_MS = 8000;
/** Largest payload a signature covers, and largest tool-call arguments. */
export const MAX_SIGN_BYTES = 64 * 1024;
export const MAX_CALL_BYTES = 256 * 1024;

export interface AccountsDeps {
  store: AccountStore;
  outbox: () => OutboxRelay | undefined;
  bus: () => Promise<Bus>;
  vault: KeyVault;
  keysClient: () => KeysClient;
  systemToken: () => Promise<string>;
  log: { warn(obj: unknown, msg: string): void };
}

export interface Page {
  limit?: number;
  cursor?: string;
}

// Inputs, validated here too: the gateway is not the only possible caller. -----------------------

const Name = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not hold control characters');

const CreateAccountInput = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('organization'), name: Name, email: z.undefined({ error: 'an organization has no email' }).optional() }),
  z.object({ kind: z.literal('user'), name: Name, email: z.email('must be an email address').max(254).optional() }),
]);

const Verb = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.:*\/-]+$/, 'must be a verb such as drive.read, hosts.* or * (letters, digits and _ . : * / -)');
export const Scope = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be "account" or a scope such as project:web or host:host_… (printable, no spaces)');
const GrantInput = z.object({
  granteeId: z.string().min(1, 'is required').max(64),
  verbs: z.array(Verb).min(1, 'must hold at least one verb').max(50, 'may hold at most 50 verbs'),
  scope: Scope.optional(),
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }).optional(),
});
const HostInput = z.object({ name: Name });
const Tool = z
  .string()
  .min(1, 'is required')
  .max(200)
  .regex(/^[A-Za-z0-9_.:/-]+$/, 'may hold letters, digits and _ . : / - only');
const RoleInput = z.enum(['owner', 'admin', 'member'], { error: 'must be owner, admin or member' });

function parse<T extends z.ZodType>(schema: T, value: unknown, code = 'invalid_request'): z.infer<T> {
  return parseInput(schema, value, { code });
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_json', `${what} is not valid JSON.`);
  }
}

// Cursors: the last id of a page, opaque to the caller. ------------------------------------------

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string | undefined, re: RegExp): string | undefined {
  if (!c) return undefined;
  const id = Buffer.from(c, 'base64url').toString();
  if (!re.test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}
const limitOf = (l: number | undefined) => Math.min(Math.max(l || 50, 1), 200);
function paged<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; nextCursor?: string } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined };
}

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';

const grantNotFound = () => new DomainError('not_found', 'grant_not_found', 'Standing grant not found.');
const hostNotFound = () => new DomainError('not_found', 'host_not_found', 'Host not found.');

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

export interface ChainLink {
  kind: 'agent' | 'user' | 'organization' | 'host';
  id: string;
  name: string;
  relation: 'self' | 'owner' | 'member';
  role?: string;
}

/** The rules of accounts, organizations and everything that gives or changes authority. */
export class AccountsDomain {
  readonly store: AccountStore;

  /** Agents as the agents service keeps them here (the chain of authority, grantees): see directory.ts. */
  readonly agents: AgentDirectory;

  constructor(private readonly deps: AccountsDeps) {
    this.store = deps.store;
    this.agents = new AgentDirectory(deps.store);
  }

  private get sql() {
    return this.store.sql;
  }

  // Access -------------------------------------------------------------------------------------

  /**
   * The caller's standing in an account, or 404. The acting account (x-svc-account or the key's
   * own) always counts; a person may also name their own account or an organization they belong
   * to by id, unless their key is project-scoped.
   */
  async access(p: Principal, accountId: string): Promise<{ account: AccountRow; standing: Standing }> {
    if (!ACCOUNT_ID_RE.test(accountId)) throw accountNotFound();
    let standing: Standing | null = null;
    if (p.kind === 'system') standing = 'system';
    else if (accountId === p.accountId) {
      if (p.kind === 'agent') standing = 'agent';
      else if (p.kind === 'host') standing = 'host';
      else standing = p.userId === accountId ? 'owner' : ((p.role as Role | undefined) ?? null);
    } else if (p.kind === 'human' && !p.projectId) {
      standing = p.userId === accountId ? 'owner' : await this.store.membership(accountId, p.userId!);
    }
    if (!standing) throw accountNotFound();
    const account = await this.store.byId(accountId);
    if (!account) throw accountNotFound();
    return { account, standing };
  }

  /** The audit record of an authority change, in the change's transaction, published through the outbox. */
  private async audit(
    q: Queryable,
    e: { accountId: string; action: string; actor: Actor; target?: { kind: string; id: string }; data?: Record<string, unknown> },
  ): Promise<void> {
    const data = e.data ?? {};
    const envelope = await enqueueEvent(q, SCHEMA, {
      subject: `accounts.${e.action}`,
      accountId: e.accountId,
      data: { action: e.action, actor: e.actor, target: e.target ?? null, ...data },
    });
    await this.store.insertAudit(q, {
      id: envelope.id,
      account_id: e.accountId,
      action: e.action,
      actor: e.actor,
      target_kind: e.target?.kind ?? null,
      target_id: e.target?.id ?? null,
      data,
      occurred_at: new Date(envelope.occurredAt),
    });
  }

  private kick(): void {
    this.deps.outbox()?.kick();
  }

  // Accounts -----------------------------------------------------------------------------------

  /** The accounts the caller can act in: their own and their organizations (an agent: its acting account). */
  async listAccounts(p: Principal, page: Page): Promise<{ rows: Array<AccountRow & { role?: string }>; nextCursor?: string }> {
    const limit = limitOf(page.limit);
    const after = decodeCursor(page.cursor, ACCOUNT_ID_RE);
    let all: Array<AccountRow & { role?: string }>;
    if (p.kind === 'human' && !p.projectId) {
      const own = await this.store.byId(p.userId!);
      const orgs = await this.store.organizationsOf(p.userId!);
      all = [...(own ? [{ ...own, role: 'owner' }] : []), ...orgs];
    } else {
      const { account, standing } = await this.access(p, p.accountId);
      all = [{ ...account, role: standing === 'agent' || standing === 'host' ? undefined : standing }];
    }
    all.sort((a, b) => (a.id < b.id ? -1 : 1));
    const rows = all.filter((a) => !after || a.id > after);
    const out = rows.slice(0, limit);
    return { rows: out, nextCursor: rows.length > limit ? encodeCursor(out[out.length - 1]!.id) : undefined };
  }

  async getAccount(p: Principal, id: string): Promise<AccountRow & { role?: string }> {
    const { account, standing } = await this.access(p, id);
    return { ...account, role: standing === 'agent' || standing === 'host' || standing === 'system' ? undefined : standing };
  }

  /**
   * A person creates an organization (and becomes its owner); the operator creates user accounts,
   * each with a first API key (plaintext returned once, imported into the keys service by hash).
   */
  async createAccount(
    p: Principal,
    input: { kind: string; name: string; email?: string },
  ): Promise<{ account: AccountRow & { role?: string }; key?: string; keyId?: string }> {
    requireAuthority(p);
    const body = parse(CreateAccountInput, { kind: input.kind, name: input.name, ...(input.email ? { email: input.email } : {}) });
    const actor = actorOf(p);
    if (body.kind === 'organization') {
      if (p.kind !== 'human') throw new DomainError('forbidden', 'human_principal_required', 'An organization is created by a person.');
      requireAccountWide(p);
      const id = newId('acct');
      const account = await this.sql.tx(async (q) => {
        const a = await this.store.insertAccount(q, { id, kind: 'organization', name: body.name, email: null, createdBy: actor });
        await this.store.upsertMembership(q, id, p.userId!, 'owner', actor);
        await this.audit(q, {
          accountId: id,
          action: 'organization.created',
          actor,
          target: { kind: 'account', id },
          data: { name: body.name, ownerId: p.userId },
        });
        await this.audit(q, {
          accountId: id,
          action: 'member.added',
          actor,
          target: { kind: 'account', id: p.userId! },
          data: { memberId: p.userId, role: 'owner' },
        });
        return a;
      });
      this.kick();
      return { account: { ...account, role: 'owner' } };
    }

    // A user account: the operator's privilege.
    const caller = p.kind === 'human' ? await this.store.byId(p.userId!) : null;
    if (!caller?.is_operator) {
      throw new DomainError('forbidden', 'operator_required', 'Only the platform operator creates user accounts.');
    }
    requireAccountWide(p);
    if (body.email && (await this.store.byEmail(body.email))) {
      throw new DomainError('conflict', 'email_taken', 'An account with this email already exists.');
    }
    const id = newId('acct');
    const plaintext = generateApiKey();
    const token = await this.deps.systemToken();
    const imported = await this.deps.keysClient().importKey(
      { keyHash: hashSecret(plaintext), prefix: keyPrefix(plaintext), name: 'first key', accountId: id, ownerKind: 'human', ownerId: id },
      { principalToken: token },
    );
    try {
      const account = await this.sql.tx(async (q) => {
        const a = await this.store.insertAccount(q, { id, kind: 'user', name: body.name, email: body.email ?? null, createdBy: actor });
        const data = { name: body.name, email: body.email ?? null, firstKeyId: imported.key!.id };
        await this.audit(q, { accountId: id, action: 'account.created', actor, target: { kind: 'account', id }, data });
        await this.audit(q, { accountId: p.accountId, action: 'account.created', actor, target: { kind: 'account', id }, data });
        return a;
      });
      this.kick();
      return { account: { ...account, role: 'owner' }, key: plaintext, keyId: imported.key!.id };
    } catch (err) {
      // No account, no key: the imported key must not outlive the failed creation.
      await this.deps
        .keysClient()
        .revokeOwnerKeys({ ownerKind: 'human', ownerId: id }, { principalToken: token })
        .catch((e) => this.deps.log.warn({ err: e, accountId: id }, 'could not revoke the key of a failed account creation'));
      if (isUniqueViolation(err)) throw new DomainError('conflict', 'email_taken', 'An account with this email already exists.');
      throw err;
    }
  }

  /** The caller's chain of authority: agent → owner account → organization it acts in. */
  async chain(p: Principal): Promise<{ chain: ChainLink[]; standing: Standing | null }> {
    const links: ChainLink[] = [];
    const linkOf = (a: AccountRow, relation: ChainLink['relation'], role?: string): ChainLink => ({
      kind: a.kind,
      id: a.id,
      name: a.name,
      relation,
      ...(role ? { role } : {}),
    });
    let standing: Standing | null = null;
    if (p.kind === 'human') {
      const user = await this.store.byId(p.userId!);
      if (user) links.push(linkOf(user, 'self'));
      if (p.accountId !== p.userId) {
        const org = await this.store.byId(p.accountId);
        if (org) links.push(linkOf(org, 'member', p.role));
        standing = (p.role as Role | undefined) ?? null;
      } else standing = 'owner';
    } else if (p.kind === 'agent') {
      const agent = await this.agents.agent(p.agentId!);
      links.push({ kind: 'agent', id: p.agentId!, name: agent?.name ?? p.agentId!, relation: 'self' });
      const ownerId = agent?.owner_account_id ?? p.accountId;
      const owner = await this.store.byId(ownerId);
      if (owner) links.push(linkOf(owner, 'owner'));
      if (p.accountId !== ownerId) {
        const org = await this.store.byId(p.accountId);
        if (org) links.push(linkOf(org, 'member', p.role));
      }
      standing = 'agent';
    } else if (p.kind === 'host') {
      const host = p.hostId ? await this.store.hostById(p.hostId) : null;
      links.push({ kind: 'host', id: p.hostId ?? 'unknown', name: host?.name ?? 'host', relation: 'self' });
      const owner = await this.store.byId(p.accountId);
      if (owner) links.push(linkOf(owner, 'owner'));
      standing = 'host';
    }
    return { chain: links, standing };
  }

  canChangeAuthority(p: Principal, standing: Standing | null): boolean {
    return canChangeAuthority(p, standing);
  }

  // Members ------------------------------------------------------------------------------------

  async listMembers(p: Principal, accountId: string, page: Page): Promise<{ rows: MemberRow[]; nextCursor?: string }> {
    const { account } = await this.access(p, accountId);
    const limit = limitOf(page.limit);
    if (account.kind === 'user') {
      // A person's own account has one member: that person.
      return { rows: [{ ...account, role: 'owner', added_at: account.created_at }] };
    }
    const rows = await this.store.members(accountId, decodeCursor(page.cursor, ACCOUNT_ID_RE), limit + 1);
    return paged(rows, limit);
  }

  /** Adds a person to an organization, or changes their role. Owners manage owners; admins the rest. */
  async addMember(p: Principal, accountId: string, memberId: string, roleIn: string): Promise<{ member: MemberRow; created: boolean }> {
    requireAuthority(p);
    const role = parse(RoleInput, roleIn, 'invalid_request');
    const { account, standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    if (account.kind !== 'organization') {
      throw new DomainError('unprocessable', 'not_an_organization', 'Only an organization has members.');
    }
    if (!ACCOUNT_ID_RE.test(memberId)) throw new DomainError('invalid_argument', 'invalid_request', 'accountId: must be an account id (acct_…)');
    const person = await this.store.byId(memberId);
    if (!person) throw new DomainError('not_found', 'member_not_found', 'No user account has this id.');
    if (person.kind !== 'user') throw new DomainError('unprocessable', 'invalid_member', 'Members are people: a user account id.');
    const actor = actorOf(p);
    const result = await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const current = await this.store.lockMembership(q, accountId, memberId);
      if (standing === 'admin' && (role === 'owner' || current?.role === 'owner')) {
        throw new DomainError('forbidden', 'insufficient_role', 'Only an owner adds owners or changes an owner’s role.');
      }
      if (current?.role === role) return { addedAt: current.created_at, created: false, changed: false };
      if (current?.role === 'owner' && (await this.store.ownerCount(q, accountId)) <= 1) {
        throw new DomainError('conflict', 'last_owner', 'An organization keeps at least one owner.');
      }
      const addedAt = await this.store.upsertMembership(q, accountId, memberId, role, actor);
      await this.audit(q, {
        accountId,
        action: current ? 'member.role_changed' : 'member.added',
        actor,
        target: { kind: 'account', id: memberId },
        data: { memberId, role, ...(current ? { previousRole: current.role } : {}) },
      });
      return { addedAt, created: !current, changed: true };
    });
    if (result.changed) this.kick();
    return { member: { ...person, role, added_at: result.addedAt }, created: result.created };
  }

  /** Removes a member; anyone may leave, owners and admins remove others (admins not owners). */
  async removeMember(p: Principal, accountId: string, memberId: string): Promise<void> {
    requireAuthority(p);
    const { account, standing } = await this.access(p, accountId);
    const self = p.kind === 'human' && memberId === p.userId;
    if (!self) requireManager(standing);
    requireAccountWide(p);
    if (account.kind !== 'organization') throw new DomainError('unprocessable', 'not_an_organization', 'Only an organization has members.');
    const actor = actorOf(p);
    await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const current = await this.store.lockMembership(q, accountId, memberId);
      if (!current) throw new DomainError('not_found', 'member_not_found', 'This person is not a member.');
      if (!self && standing === 'admin' && current.role === 'owner') {
        throw new DomainError('forbidden', 'insufficient_role', 'Only an owner removes an owner.');
      }
      if (current.role === 'owner' && (await this.store.ownerCount(q, accountId)) <= 1) {
        throw new DomainError('conflict', 'last_owner', 'An organization keeps at least one owner.');
      }
      await this.store.deleteMembership(q, accountId, memberId);
      await this.audit(q, {
        accountId,
        action: 'member.removed',
        actor,
        target: { kind: 'account', id: memberId },
        data: { memberId, role: current.role },
      });
    });
    this.kick();
  }

  // Settings -----------------------------------------------------------------------------------

  private async currentSettings(accountId: string, q?: Queryable, lock = false): Promise<{ doc: Settings; updatedAt: Date | null }> {
    const row = await this.store.settings(accountId, q, lock);
    if (!row) return { doc: DEFAULT_SETTINGS, updatedAt: null };
    // A stored document is valid by construction; parsing again fills defaults added since.
    return { doc: validateSettings(row.document), updatedAt: row.updated_at };
  }

  async getSettings(p: Principal, accountId: string): Promise<{ doc: Settings; etag: string; updatedAt: Date | null }> {
    await this.access(p, accountId);
    const { doc, updatedAt } = await this.currentSettings(accountId);
    return { doc, etag: settingsEtag(doc), updatedAt };
  }

  /** PUT (replace) or PATCH (merge patch) under If-Match; an unchanged document is not a change. */
  async writeSettings(
    p: Principal,
    accountId: string,
    mode: 'replace' | 'merge',
    json: string,
    ifMatch: string | undefined,
  ): Promise<{ doc: Settings; etag: string; updatedAt: Date | null }> {
    requireAuthority(p);
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    const input = parseJson(json, 'The settings document');
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new DomainError('invalid_argument', 'invalid_settings', 'settings: must be a JSON object');
    }
    const actor = actorOf(p);
    const out = await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const { doc: current, updatedAt } = await this.currentSettings(accountId, q, true);
      const currentEtag = settingsEtag(current);
      checkIfMatch(ifMatch, currentEtag);
      const next = validateSettings(mode === 'replace' ? input : mergePatch(current, input));
      if (canonicalJson(next) === canonicalJson(current)) return { doc: current, etag: currentEtag, updatedAt, changed: false };
      const etag = settingsEtag(next);
      const row = await this.store.putSettings(q, accountId, next, etag, actor);
      const changed = Object.keys(next).filter(
        (k) => canonicalJson((next as Record<string, unknown>)[k]) !== canonicalJson((current as Record<string, unknown>)[k]),
      );
      await this.audit(q, {
        accountId,
        action: 'settings.updated',
        actor,
        target: { kind: 'settings', id: accountId },
        data: { mode, changed, etag },
      });
      return { doc: next, etag, updatedAt: row.updated_at, changed: true };
    });
    if (out.changed) this.kick();
    return out;
  }

  // Standing grants ----------------------------------------------------------------------------

  async listGrants(p: Principal, accountId: string, page: Page): Promise<{ rows: GrantRow[]; nextCursor?: string }> {
    await this.access(p, accountId);
    const limit = limitOf(page.limit);
    const rows = await this.store.grantsOf(accountId, {
      before: decodeCursor(page.cursor, GRANT_ID_RE),
      limit: limit + 1,
      scopePrefix: p.projectId ? projectScope(p.projectId) : undefined,
    });
    return paged(rows, limit);
  }

  /** Grants the caller holds: given to its agent id, host id, person or acting account. */
  async listHeld(p: Principal, page: Page): Promise<{ rows: GrantRow[]; nextCursor?: string }> {
    const ids =
      p.kind === 'agent'
        ? [p.agentId!]
        : p.kind === 'host'
          ? [p.hostId!]
          : p.kind === 'human'
            ? [...new Set([p.userId!, p.accountId])]
            : [];
    const limit = limitOf(page.limit);
    const rows = ids.length
      ? await this.store.grantsHeld(ids, { before: decodeCursor(page.cursor, GRANT_ID_RE), limit: limit + 1 })
      : [];
    return paged(rows, limit);
  }

  private async granteeKind(accountId: string, granteeId: string): Promise<GrantRow['grantee_kind']> {
    const notFound = () => new DomainError('not_found', 'grantee_not_found', 'No agent, host or account has this id.');
    if (ACCOUNT_ID_RE.test(granteeId)) {
      if (granteeId === accountId) {
        throw new DomainError('unprocessable', 'invalid_grantee', 'An account already holds every right on itself.');
      }
      if (!(await this.store.byId(granteeId))) throw notFound();
      return 'account';
    }
    if (HOST_ID_RE.test(granteeId)) {
      if (!(await this.store.hostById(granteeId))) throw notFound();
      return 'host';
    }
    if (AGENT_ID_RE.test(granteeId)) {
      if (!(await this.agents.agent(granteeId))) throw notFound();
      return 'agent';
    }
    throw new DomainError('invalid_argument', 'invalid_request', 'granteeId: must be an agent (agt_…), host (host_…) or account (acct_…) id');
  }

  /**
   * Creates a standing grant, or widens the live one for the same grantee and scope (verbs are
   * added, the later expiry wins). Sending the same grant again changes nothing (a retry).
   */
  async createGrant(
    p: Principal,
    accountId: string,
    input: { granteeId: string; verbs: string[]; scope?: string; expiresAt?: string },
  ): Promise<{ grant: GrantRow; outcome: 'created' | 'widened' | 'unchanged' }> {
    requireAuthority(p);
    const body = parse(GrantInput, input);
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    let scope = body.scope ?? (p.projectId ? projectScope(p.projectId) : 'account');
    if (p.projectId && !scopeWithin(scope, projectScope(p.projectId))) {
      throw new DomainError('forbidden', 'project_scope', `This key is limited to project ${p.projectId}: the scope must be ${projectScope(p.projectId)} or inside it.`);
    }
    scope = scope.trim();
    const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw new DomainError('invalid_argument', 'invalid_request', 'expiresAt: must be in the future');
    }
    const verbs = [...new Set(body.verbs)].sort();
    const granteeKind = await this.granteeKind(accountId, body.granteeId);
    const actor = actorOf(p);
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await this.sql.tx(async (q) => {
          let existing = await this.store.liveGrantFor(q, accountId, body.granteeId, scope);
          if (existing?.expires_at && existing.expires_at.getTime() <= Date.now()) {
            // An expired grant is over: the new one starts afresh.
            await this.store.revokeGrant(q, existing.id, SYSTEM_ACTOR, existing.expires_at);
            existing = null;
          }
          if (!existing) {
            const grant = await this.store.insertGrant(q, {
              id: newId('grt'),
              account_id: accountId,
              grantee_kind: granteeKind,
              grantee_id: body.granteeId,
              verbs,
              scope,
              expires_at: expiresAt,
              created_by: actor,
            });
            await this.audit(q, {
              accountId,
              action: 'grant.created',
              actor,
              target: { kind: granteeKind, id: body.granteeId },
              data: { grantId: grant.id, verbs, scope, expiresAt: expiresAt?.toISOString() ?? null },
            });
            return { grant, outcome: 'created' as const };
          }
          const union = [...new Set([...existing.verbs, ...verbs])].sort();
          const expiry =
            existing.expires_at === null || expiresAt === null
              ? null
              : new Date(Math.max(existing.expires_at.getTime(), expiresAt.getTime()));
          const sameExpiry = (expiry?.getTime() ?? null) === (existing.expires_at?.getTime() ?? null);
          if (union.length === existing.verbs.length && sameExpiry) return { grant: existing, outcome: 'unchanged' as const };
          const grant = await this.store.widenGrant(q, existing.id, union, expiry);
          await this.audit(q, {
            accountId,
            action: 'grant.widened',
            actor,
            target: { kind: granteeKind, id: body.granteeId },
            data: {
              grantId: grant.id,
              verbs: union,
              addedVerbs: union.filter((v) => !existing!.verbs.includes(v)),
              scope,
              expiresAt: expiry?.toISOString() ?? null,
              previousExpiresAt: existing.expires_at?.toISOString() ?? null,
            },
          });
          return { grant, outcome: 'widened' as const };
        });
        if (out.outcome !== 'unchanged') this.kick();
        return out;
      } catch (err) {
        // Two first grants at once: the loser widens the winner's.
        if (isUniqueViolation(err) && attempt < 2) continue;
        throw err;
      }
    }
  }

  /** Deletes a grant at once; deleting it again succeeds (a retry). */
  async deleteGrant(p: Principal, id: string): Promise<void> {
    requireAuthority(p);
    if (!GRANT_ID_RE.test(id)) throw grantNotFound();
    const grant = (await this.store.grantById(id)) ?? (await this.store.revokedGrant(id));
    if (!grant) throw grantNotFound();
    const { standing } = await this.access(p, grant.account_id).catch((err) => {
      throw err instanceof DomainError && err.kind === 'not_found' ? grantNotFound() : err;
    });
    if (p.projectId && !scopeWithin(grant.scope, projectScope(p.projectId))) throw grantNotFound();
    requireManager(standing);
    if (grant.revoked_at) return;
    const actor = actorOf(p);
    const done = await this.sql.tx(async (q) => {
      const live = await this.store.grantById(id, q, true);
      if (!live) return false;
      await this.store.revokeGrant(q, id, actor);
      await this.audit(q, {
        accountId: live.account_id,
        action: 'grant.deleted',
        actor,
        target: { kind: live.grantee_kind, id: live.grantee_id },
        data: { grantId: id, verbs: live.verbs, scope: live.scope },
      });
      return true;
    });
    if (done) this.kick();
  }

  // Signing keys -------------------------------------------------------------------------------

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
  async verify(
    p: Principal,
    accountId: string,
    jws: string,
  ): Promise<{ valid: boolean; keyId?: string; payloadJson?: string; reason?: string }> {
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

  // Hosts --------------------------------------------------------------------------------------

  async listHosts(p: Principal, accountId: string, page: Page): Promise<{ rows: HostRow[]; nextCursor?: string }> {
    await this.access(p, accountId);
    const limit = limitOf(page.limit);
    const rows = await this.store.hostsOf(accountId, { before: decodeCursor(page.cursor, HOST_ID_RE), limit: limit + 1 });
    return paged(rows, limit);
  }

  /** Pairs a machine: a host and its credential (svch_…, shown once, stored as a hash). */
  async pairHost(p: Principal, accountId: string, name: string): Promise<{ host: HostRow; credential: string }> {
    requireAuthority(p);
    const body = parse(HostInput, { name });
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    const credential = generateHostCredential();
    const actor = actorOf(p);
    const host = await this.sql.tx(async (q) => {
      const h = await this.store.insertHost(q, {
        id: newId('host'),
        account_id: accountId,
        name: body.name,
        credential_hash: hashSecret(credential),
        credential_prefix: credential.slice(0, 13),
        paired_by: actor,
      });
      await this.audit(q, {
        accountId,
        action: 'host.paired',
        actor,
        target: { kind: 'host', id: h.id },
        data: { hostId: h.id, name: h.name, credentialPrefix: h.credential_prefix },
      });
      return h;
    });
    this.kick();
    return { host, credential };
  }

  /** Unpairs a host: its credential stops working. Unpairing again succeeds. */
  async unpairHost(p: Principal, hostId: string): Promise<void> {
    requireAuthority(p);
    if (!HOST_ID_RE.test(hostId)) throw hostNotFound();
    const host = (await this.store.hostById(hostId)) ?? (await this.store.unpairedHost(hostId));
    if (!host) throw hostNotFound();
    const { standing } = await this.access(p, host.account_id).catch((err) => {
      throw err instanceof DomainError && err.kind === 'not_found' ? hostNotFound() : err;
    });
    requireManager(standing);
    requireAccountWide(p);
    if (host.unpaired_at) return;
    const actor = actorOf(p);
    const done = await this.sql.tx(async (q) => {
      const live = await this.store.hostById(hostId, q, true);
      if (!live) return false;
      await this.store.unpairHost(q, hostId);
      await this.audit(q, { accountId: live.account_id, action: 'host.unpaired', actor, target: { kind: 'host', id: hostId }, data: { hostId } });
      return true;
    });
    if (done) this.kick();
  }

  /**
   * May the caller call this host? Anyone acting in the host's account, or a holder of a live grant
   * of `hosts.call` from that account on the host (scope `account` or `host:<id>`).
   */
  private async mayCallHost(p: Principal, host: HostRow): Promise<boolean> {
    try {
      await this.access(p, host.account_id);
      return true;
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'not_found')) throw err;
    }
    const holders = [p.agentId, p.hostId, p.userId, p.accountId].filter((x): x is string => !!x);
    const held = await this.store.grantsHeld([...new Set(holders)], { limit: 200 });
    return held.some(
      (g) =>
        g.account_id === host.account_id &&
        (g.scope === 'account' || g.scope === '*' || scopeWithin(`host:${host.id}`, g.scope)) &&
        g.verbs.some((v) => verbCovers(v, 'hosts.call')),
    );
  }

  /** Relays a tool call to the paired host over NATS request/reply; 503 host_offline when it is not connected. */
  async callHost(
    p: Principal,
    hostId: string,
    input: { tool: string; argumentsJson: string; timeoutMs?: number },
  ): Promise<{ callId: string; result: unknown; durationMs: number; host: HostRow }> {
    if (!HOST_ID_RE.test(hostId)) throw hostNotFound();
    const host = await this.store.hostById(hostId);
    if (!host || !(await this.mayCallHost(p, host))) throw hostNotFound();
    const tool = parse(Tool, input.tool);
    if (Buffer.byteLength(input.argumentsJson || '{}') > MAX_CALL_BYTES) {
      throw new DomainError('too_large', 'payload_too_large', 'Tool arguments are at most 256 KiB.');
    }
    const args = input.argumentsJson ? parseJson(input.argumentsJson, 'arguments') : {};
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'arguments: must be a JSON object');
    }
    const timeoutMs = Math.min(
      Math.max(input.timeoutMs ?? (await this.currentSettings(host.account_id)).doc.hosts.callTimeoutMs, 100),
      MAX_HOST_CALL_MS,
    );
    const callId = newId('call');
    const started = Date.now();
    const bus = await this.deps.bus();
    let result: unknown;
    try {
      result = await bus.request(
        `hosts.${host.id}.call`,
        { callId, hostId: host.id, accountId: host.account_id, tool, arguments: args, caller: actorOf(p), timeoutMs },
        timeoutMs,
      );
    } catch (err) {
      if (err instanceof BusRequestError) {
        if (err.code === 'no_responders') throw new DomainError('unavailable', 'host_offline', 'The host is not connected.');
        if (err.code === 'timeout') throw new DomainError('deadline_exceeded', 'host_timeout', `The host did not answer within ${timeoutMs} ms.`);
        throw new DomainError('unavailable', 'host_error', `The host failed to answer: ${err.message}`);
      }
      throw err;
    }
    this.store.touchHost(host.id).catch(() => {});
    return { callId, result, durationMs: Date.now() - started, host };
  }

  async verifyHostCredential(p: Principal, hash: string): Promise<HostRow> {
    if (p.kind !== 'system') throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
    const invalid = () => new DomainError('unauthenticated', 'invalid_host_credential', 'The host credential is invalid or unpaired.');
    if (!/^[0-9a-f]{64}$/.test(hash)) throw invalid();
    const host = await this.store.hostByCredentialHash(hash);
    if (!host) throw invalid();
    return host;
  }

  // Audit --------------------------------------------------------------------------------------

  /** The audit trail of an account, newest first: its owners and admins read it. */
  async listAudit(p: Principal, accountId: string, page: Page & { action?: string }): Promise<{ rows: AuditRow[]; nextCursor?: string }> {
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    if (page.action !== undefined && !/^[a-z_]+\.[a-z_]+$/.test(page.action)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'action: must look like grant.created');
    }
    const limit = limitOf(page.limit);
    const rows = await this.store.audit(accountId, {
      before: decodeCursor(page.cursor, /^evt_[0-9a-z]{26}$/),
      limit: limit + 1,
      action: page.action,
    });
    return paged(rows, limit);
  }

  /**
   * Agent events become audit entries of the accounts they touch (the agents service publishes
   * them through its outbox; this runs once per event).
   */
  auditRowsForAgentEvent(event: { id: string; type: string; occurredAt: string; accountId: string; data: unknown }): AuditRow[] {
    const d = event.data as {
      agent?: { id?: string; name?: string };
      actor?: Actor;
      fromAccountId?: string;
      toAccountId?: string;
      revokedKeys?: number;
    };
    const action = { 'agents.agent.created': 'agent.created', 'agents.agent.deleted': 'agent.deleted', 'agents.agent.owner_changed': 'agent.owner_changed' }[
      event.type
    ];
    if (!action || !d?.agent?.id || !d.actor) return [];
    const base = {
      action,
      actor: d.actor,
      target_kind: 'agent',
      target_id: d.agent.id,
      occurred_at: new Date(event.occurredAt),
    };
    const data: Record<string, unknown> = { agentId: d.agent.id, name: d.agent.name ?? null };
    if (action === 'agent.deleted') data.revokedKeys = d.revokedKeys ?? null;
    if (action !== 'agent.owner_changed') return [{ ...base, id: event.id, account_id: event.accountId, data }];
    const moved = { ...data, fromAccountId: d.fromAccountId, toAccountId: d.toAccountId };
    const rows: AuditRow[] = [{ ...base, id: event.id, account_id: d.fromAccountId ?? event.accountId, data: moved }];
    if (d.toAccountId && d.toAccountId !== rows[0]!.account_id) rows.push({ ...base, id: newId('evt'), account_id: d.toAccountId, data: moved });
    return rows;
  }
}
