import { DomainError, type Handlers } from '@svc/kit';
import type { accounts } from '@svc/proto';

import type { AccountsDomain, PublicKeyView } from './accounts/index.js';
import type { AccountRow, AccountStore, Actor, AuditRow, GrantRow, HostRow, MemberRow } from './accounts/store.js';
import type { oauthHandlers } from './oauth/server.js';
import type { passkeyHandlers } from './passkeys/server.js';

type Def = typeof accounts.AccountsServiceService;
/** Served by oauth/server.ts and passkeys/server.ts. */
type OauthMethods = keyof ReturnType<typeof oauthHandlers> | keyof ReturnType<typeof passkeyHandlers>;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : undefined);

const toAccount = (a: AccountRow & { role?: string }): accounts.Account => ({
  id: a.id,
  kind: a.kind,
  name: a.name,
  createdAt: a.created_at.toISOString(),
  email: a.email ?? undefined,
  role: a.role,
});

const toPrincipal = (a: Actor): accounts.Principal => ({
  kind: a.kind,
  id: a.id,
  keyId: a.keyId ?? undefined,
  channel: a.channel,
  accountId: a.accountId,
});

const toMember = (m: MemberRow): accounts.Member => ({
  account: toAccount({ ...m, role: undefined }),
  role: m.role,
  addedAt: m.added_at.toISOString(),
});

const toGrant = (g: GrantRow): accounts.Grant => ({
  id: g.id,
  accountId: g.account_id,
  granteeKind: g.grantee_kind,
  granteeId: g.grantee_id,
  verbs: g.verbs,
  scope: g.scope,
  expiresAt: iso(g.expires_at),
  createdAt: g.created_at.toISOString(),
  updatedAt: g.updated_at.toISOString(),
  createdBy: toPrincipal(g.created_by),
});

const toHost = (h: HostRow): accounts.Host => ({
  id: h.id,
  accountId: h.account_id,
  name: h.name,
  credentialPrefix: h.credential_prefix,
  createdAt: h.created_at.toISOString(),
  lastSeenAt: iso(h.last_seen_at),
  pairedBy: toPrincipal(h.paired_by),
});

const toPublicKey = (k: PublicKeyView): accounts.PublicKey => ({
  id: k.id,
  jwkJson: JSON.stringify(k.jwk),
  createdAt: k.createdAt.toISOString(),
  retiredAt: iso(k.retiredAt),
  verifyUntil: iso(k.verifyUntil),
});

const toAudit = (e: AuditRow): accounts.AuditEvent => ({
  id: e.id,
  accountId: e.account_id,
  action: e.action,
  actor: toPrincipal(e.actor),
  targetKind: e.target_kind ?? undefined,
  targetId: e.target_id ?? undefined,
  dataJson: JSON.stringify(e.data),
  occurredAt: e.occurred_at.toISOString(),
});

const toSettings = (s: { doc: unknown; etag: string; updatedAt: Date | null }): accounts.Settings => ({
  documentJson: JSON.stringify(s.doc),
  etag: s.etag,
  updatedAt: iso(s.updatedAt),
});

// A non-member gets the same answer as for an account that does not exist.
const accountNotFound = () => new DomainError('not_found', 'account_not_found', 'Account not found.');

/** gRPC handlers: translate messages, let the domain decide. */
export function handlers(domain: AccountsDomain, store: AccountStore): Omit<Handlers<Def>, OauthMethods> {
  return {
    async getMe(_req, { principal: p }) {
      const own = p.kind === 'human' ? p.userId! : p.accountId;
      const account = await store.byId(own);
      const orgs = p.kind === 'human' ? await store.organizationsOf(p.userId!) : [];
      return {
        // Whether the caller is the operator: other services check it (the models service's credit grants).
        account: account ? { ...toAccount(account), ...(account.is_operator ? { operator: true } : {}) } : undefined,
        organizations: orgs.map((o) => ({ account: toAccount({ ...o, role: undefined }), role: o.role })),
      };
    },
    async resolveActingAccount(req, { principal: p }) {
      if (p.kind !== 'system') throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
      if (req.accountId === req.userId) return { accountId: req.accountId, role: 'owner' };
      const role = await store.membership(req.accountId, req.userId);
      if (!role) throw accountNotFound();
      return { accountId: req.accountId, role };
    },

    async listAccounts(req, { principal }) {
      const { rows, nextCursor } = await domain.listAccounts(principal, req);
      return { accounts: rows.map(toAccount), nextCursor };
    },
    async createAccount(req, { principal }) {
      const out = await domain.createAccount(principal, req);
      return { account: toAccount(out.account), key: out.key, keyId: out.keyId };
    },
    async getAccount(req, { principal }) {
      return { account: toAccount(await domain.getAccount(principal, req.id)) };
    },
    async getChain(_req, { principal: p }) {
      const { chain, standing } = await domain.chain(p);
      return {
        chain: chain.map((l) => ({ kind: l.kind, id: l.id, name: l.name, relation: l.relation, role: l.role })),
        actingAccountId: p.accountId,
        principalKind: p.kind,
        channel: p.channel,
        canChangeAuthority: domain.canChangeAuthority(p, standing),
        projectId: p.projectId,
      };
    },

    async listMembers(req, { principal }) {
      const { rows, nextCursor } = await domain.listMembers(principal, req.accountId, req);
      return { members: rows.map(toMember), nextCursor };
    },
    async addMember(req, { principal }) {
      const { member, created } = await domain.addMember(principal, req.accountId, req.memberId, req.role);
      return { member: toMember(member), created };
    },
    async removeMember(req, { principal }) {
      await domain.removeMember(principal, req.accountId, req.memberId);
      return {};
    },

    async getSettings(req, { principal }) {
      return { settings: toSettings(await domain.getSettings(principal, req.accountId)) };
    },
    async replaceSettings(req, { principal }) {
      return { settings: toSettings(await domain.writeSettings(principal, req.accountId, 'replace', req.documentJson, req.ifMatch)) };
    },
    async patchSettings(req, { principal }) {
      return { settings: toSettings(await domain.writeSettings(principal, req.accountId, 'merge', req.patchJson, req.ifMatch)) };
    },

    async listGrants(req, { principal }) {
      const { rows, nextCursor } = await domain.listGrants(principal, req.accountId, req);
      return { grants: rows.map(toGrant), nextCursor };
    },
    async createGrant(req, { principal }) {
      const { grant, outcome } = await domain.createGrant(principal, req.accountId, req);
      return { grant: toGrant(grant), outcome };
    },
    async deleteGrant(req, { principal }) {
      await domain.deleteGrant(principal, req.id);
      return {};
    },
    async listHeldGrants(req, { principal }) {
      const { rows, nextCursor } = await domain.listHeld(principal, req);
      return { grants: rows.map(toGrant), nextCursor };
    },

    async getSigningKey(req, { principal }) {
      const k = await domain.getSigningKey(principal, req.accountId);
      return { keys: { current: toPublicKey(k.current), previous: k.previous.map(toPublicKey) } };
    },
    async rotateSigningKey(req, { principal }) {
      const k = await domain.rotateSigningKey(principal, req.accountId, req.gracePeriodHours);
      return { keys: { current: toPublicKey(k.current), previous: k.previous.map(toPublicKey) } };
    },
    async sign(req, { principal }) {
      return domain.sign(principal, req.accountId, req.payloadJson);
    },
    async verifySignature(req, { principal }) {
      return domain.verify(principal, req.accountId, req.jws);
    },

    async listHosts(req, { principal }) {
      const { rows, nextCursor } = await domain.listHosts(principal, req.accountId, req);
      return { hosts: rows.map(toHost), nextCursor };
    },
    async pairHost(req, { principal }) {
      const { host, credential } = await domain.pairHost(principal, req.accountId, req.name);
      return { host: toHost(host), credential };
    },
    async unpairHost(req, { principal }) {
      await domain.unpairHost(principal, req.hostId);
      return {};
    },
    async callHost(req, { principal, signal }) {
      const out = await domain.callHost(principal, req.hostId, req, signal);
      return {
        hostId: out.host.id,
        tool: req.tool,
        resultJson: JSON.stringify(out.result ?? null),
        durationMs: out.durationMs,
        callId: out.callId,
      };
    },
    async verifyHostCredential(req, { principal }) {
      return { host: toHost(await domain.verifyHostCredential(principal, req.credentialHash)) };
    },

    async listAudit(req, { principal }) {
      const { rows, nextCursor } = await domain.listAudit(principal, req.accountId, req);
      return { events: rows.map(toAudit), nextCursor };
    },

    async syncAgents(req, { principal }) {
      return { applied: await domain.agents.sync(principal, req.agents) };
    },
    async forgetAgent(req, { principal }) {
      await domain.agents.forget(principal, req.id);
      return {};
    },
    async getHost(req, { principal }) {
      return { host: toHost(await domain.getHost(principal, req.hostId)) };
    },
    async renameHost(req, { principal }) {
      return { host: toHost(await domain.renameHost(principal, req.hostId, req.name)) };
    },
    async getMember(req, { principal }) {
      return { member: toMember(await domain.getMember(principal, req.accountId, req.memberId)) };
    },
    async getAuditEvent(req, { principal }) {
      return { event: toAudit(await domain.getAuditEvent(principal, req.accountId, req.eventId)) };
    },
    async getPermissions(_req, { principal: p }) {
      const r = await domain.permissions(p);
      return {
        kind: p.kind,
        accountId: p.accountId,
        channel: p.channel ?? 'api',
        standing: r.standing,
        projectId: p.projectId,
        canChangeAuthority: r.canChangeAuthority,
        canManage: r.canManage,
        heldGrants: r.held.map(toGrant),
      };
    },
  };
}
