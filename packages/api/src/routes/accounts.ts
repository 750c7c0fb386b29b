import { z } from 'zod';

import { AccountId, DisplayName, ListQuery, Nullable, prefixedId, reply, route, type RouteInput, Success, Timestamp } from '../route.js';

/**
 * Accounts (issue 4): accounts and organizations, members, settings, standing grants, signing
 * keys, hosts and the audit trail. Authority-changing operations carry `authority: true` (an agent
 * key gets 403 human_principal_required at the gateway); the accounts service enforces the same
 * rules again, plus roles, project scope and the MCP channel. See docs/accounts.md.
 */

const GrantId = prefixedId('grt', 'a standing grant id');
const HostId = prefixedId('host', 'a host id');
const Name = DisplayName;
const Role = z.enum(['owner', 'admin', 'member'], { error: 'must be owner, admin or member' });
const Iso = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });
const JsonObject = z.record(z.string(), z.unknown(), { error: 'must be a JSON object' });

const AccountParams = z.object({ id: AccountId });

// Shapes -------------------------------------------------------------------------------------

export const Account = z
  .object({
    id: z.string(),
    kind: z.enum(['user', 'organization']),
    name: z.string(),
    email: Nullable(z.string()),
    createdAt: Timestamp,
    role: Nullable(z.string()).describe("The caller's role in the account (owner, admin, member); null for an agent."),
  })
  .meta({ id: 'Account' });

const PrincipalRef = z
  .object({
    kind: z.enum(['human', 'agent', 'host', 'system']),
    id: z.string(),
    keyId: Nullable(z.string()),
    channel: z.string(),
    accountId: z.string().describe('The account the principal acted in.'),
  })
  .meta({ id: 'PrincipalRef' });

export const Member = z
  .object({ accountId: z.string(), name: z.string(), email: Nullable(z.string()), role: Role, addedAt: Timestamp })
  .meta({ id: 'Member' });

export const Grant = z
  .object({
    id: z.string(),
    accountId: z.string().describe('The account that gives the grant.'),
    granteeKind: z.enum(['agent', 'host', 'account']),
    granteeId: z.string(),
    verbs: z.array(z.string()),
    scope: z.string(),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    createdBy: PrincipalRef,
  })
  .meta({ id: 'StandingGrant' });

const Jwk = z
  .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string(), kid: z.string(), alg: z.literal('EdDSA'), use: z.literal('sig') })
  .meta({ id: 'Ed25519Jwk' });

export const SigningKey = z
  .object({
    id: z.string().describe('The current key id (kid).'),
    algorithm: z.literal('EdDSA'),
    publicKey: Jwk,
    createdAt: Timestamp,
    previous: z
      .array(z.object({ id: z.string(), publicKey: Jwk, createdAt: Timestamp, retiredAt: Timestamp, verifyUntil: Timestamp }))
      .describe('Retired keys still inside their grace period: they verify, they no longer sign.'),
    jwks: z.object({ keys: z.array(Jwk) }).describe('Every key that verifies now (a JWKS).'),
  })
  .meta({ id: 'SigningKey' });

export const Host = z
  .object({
    id: z.string(),
    accountId: z.string(),
    name: z.string(),
    credentialPrefix: z.string(),
    createdAt: Timestamp,
    lastSeenAt: Nullable(Timestamp),
    pairedBy: PrincipalRef,
  })
  .meta({ id: 'Host' });

export const AuditEvent = z
  .object({
    id: z.string(),
    accountId: z.string(),
    action: z.string().describe('grant.created, grant.widened, grant.deleted, member.added, settings.updated, ...'),
    actor: PrincipalRef,
    target: z.object({ kind: z.string(), id: z.string() }).nullable(),
    data: z.record(z.string(), z.unknown()),
    occurredAt: Timestamp,
  })
  .meta({ id: 'AuditEvent' });

const ChainLink = z.object({
  kind: z.enum(['agent', 'user', 'organization', 'host']),
  id: z.string(),
  name: z.string(),
  relation: z.enum(['self', 'owner', 'member']),
  role: Nullable(z.string()),
});

export const Chain = z
  .object({
    chain: z.array(ChainLink).describe('From the caller to the account it acts in: agent → owner account → organization.'),
    actingAccountId: z.string(),
    principal: z.object({ kind: z.string(), channel: z.string(), projectId: Nullable(z.string()) }),
    canChangeAuthority: z.boolean(),
  })
  .meta({ id: 'AuthorityChain' });

export const Settings = z
  .object({
    timezone: z.string().describe('IANA time zone (default UTC).'),
    locale: z.string().describe('BCP 47 tag (default en-US).'),
    defaultModel: z.string().nullable(),
    notifications: z.object({ email: z.boolean(), securityAlerts: z.boolean() }),
    hosts: z.object({ callTimeoutMs: z.number().int().min(100).max(8000) }),
    signing: z.object({ gracePeriodHours: z.number().int().min(0).max(8760) }),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({ id: 'AccountSettings' });

// RPC → JSON ---------------------------------------------------------------------------------

interface RpcAccount {
  id: string;
  kind: string;
  name: string;
  createdAt: string;
  email?: string;
  role?: string;
}
interface RpcPrincipal {
  kind: string;
  id: string;
  keyId?: string;
  channel: string;
  accountId: string;
}
interface RpcGrant {
  id: string;
  accountId: string;
  granteeKind: string;
  granteeId: string;
  verbs: string[];
  scope: string;
  expiresAt?: string;
  createdAt: string;
  updatedAt: string;
  createdBy?: RpcPrincipal;
}
interface RpcPublicKey {
  id: string;
  jwkJson: string;
  createdAt: string;
  retiredAt?: string;
  verifyUntil?: string;
}
interface RpcHost {
  id: string;
  accountId: string;
  name: string;
  credentialPrefix: string;
  createdAt: string;
  lastSeenAt?: string;
  pairedBy?: RpcPrincipal;
}

const account = (a: RpcAccount) => ({
  id: a.id,
  kind: a.kind,
  name: a.name,
  email: a.email ?? null,
  createdAt: a.createdAt,
  role: a.role ?? null,
});
const principalRef = (p: RpcPrincipal | undefined) => ({
  kind: p?.kind ?? 'system',
  id: p?.id ?? 'system',
  keyId: p?.keyId ?? null,
  channel: p?.channel ?? 'internal',
  accountId: p?.accountId ?? 'system',
});
export const grantJson = (g: RpcGrant) => ({
  id: g.id,
  accountId: g.accountId,
  granteeKind: g.granteeKind,
  granteeId: g.granteeId,
  verbs: g.verbs,
  scope: g.scope,
  expiresAt: g.expiresAt ?? null,
  createdAt: g.createdAt,
  updatedAt: g.updatedAt,
  createdBy: principalRef(g.createdBy),
});
const hostJson = (h: RpcHost) => ({
  id: h.id,
  accountId: h.accountId,
  name: h.name,
  credentialPrefix: h.credentialPrefix,
  createdAt: h.createdAt,
  lastSeenAt: h.lastSeenAt ?? null,
  pairedBy: principalRef(h.pairedBy),
});
const signingKeyJson = (res: { keys?: { current?: RpcPublicKey; previous: RpcPublicKey[] } }) => {
  const cur = res.keys!.current!;
  const previous = res.keys!.previous.map((k) => ({
    id: k.id,
    publicKey: JSON.parse(k.jwkJson),
    createdAt: k.createdAt,
    retiredAt: k.retiredAt!,
    verifyUntil: k.verifyUntil!,
  }));
  const publicKey = JSON.parse(cur.jwkJson);
  return {
    id: cur.id,
    algorithm: 'EdDSA' as const,
    publicKey,
    createdAt: cur.createdAt,
    previous,
    jwks: { keys: [publicKey, ...previous.map((k) => k.publicKey)] },
  };
};
const settingsReply = (res: { settings?: { documentJson: string; etag: string } }) =>
  reply(JSON.parse(res.settings!.documentJson), { headers: { etag: res.settings!.etag } });
const success = () => ({ success: true as const });
const page = (i: RouteInput) => ({ limit: i.query.limit, cursor: i.query.cursor });
const WARNING = 'This secret is displayed only once. Store it securely: it cannot be shown again.';

const list = <T extends z.ZodType>(name: string, item: T, id: string) =>
  z.object({ [name]: z.array(item), nextCursor: Nullable(z.string()) }).meta({ id });

const IfMatch = z.object({ 'if-match': z.string().max(2000).optional().describe('An ETag from GET; 412 when the settings changed since.') });

// Routes -------------------------------------------------------------------------------------

const CreateAccountBody = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('organization'), name: Name }).strict(),
    z.object({ kind: z.literal('user'), name: Name, email: z.email('must be an email address').max(254).optional() }).strict(),
  ])
  .meta({
    id: 'CreateAccountRequest',
    description: 'An organization (any person; the caller becomes its owner) or a user account (the operator only).',
  });

const CreatedUser = z
  .object({ account: Account, key: z.string().describe("The new person's first API key. Shown once."), keyId: z.string(), warning: z.string() })
  .meta({ id: 'CreatedUserAccount' });

const GrantBody = z
  .object({
    granteeId: z
      .string()
      .regex(/^(agt|host|acct)_[0-9a-z]{26}$/, 'must be an agent (agt_…), host (host_…) or account (acct_…) id')
      .describe('Who receives the grant: an agent, a host or another account.'),
    verbs: z
      .array(
        z
          .string()
          .min(1)
          .max(64)
          .regex(/^[A-Za-z0-9_.:*\/-]+$/, 'must be a verb such as drive.read, hosts.* or * (letters, digits and _ . : * / -)'),
      )
      .min(1, 'must hold at least one verb')
      .max(50, 'may hold at most 50 verbs'),
    scope: z
      .string()
      .max(200)
      .min(1)
      .regex(/^[\x21-\x7e]+$/, 'must be "account" or a scope such as project:web or host:host_… (printable, no spaces)')
      .optional()
      .describe(
        'Default "account" (the whole account). "project:<id>[/…]" is a project (a project-scoped key grants inside its own only); "host:<id>" one host.',
      ),
    expiresAt: Iso.optional().describe('When the grant ends (in the future). Default: never.'),
  })
  .strict()
  .meta({ id: 'CreateStandingGrantRequest' });

const SignBody = z
  .object({ payload: z.unknown().refine((v) => v !== undefined, 'is required').describe('Any JSON value (at most 64 KiB).') })
  .strict()
  .meta({ id: 'SignRequest' });

export const accountsRoutes = [
  route({
    id: 'accounts.list',
    method: 'get',
    path: '/accounts',
    summary: 'The accounts the caller can act in: its own and its organizations, with its role.',
    tag: 'accounts',
    query: ListQuery,
    response: list('accounts', Account, 'AccountList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listAccounts',
      request: page,
      response: (res: { accounts: RpcAccount[]; nextCursor?: string }) => ({
        accounts: res.accounts.map(account),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    id: 'accounts.create',
    method: 'post',
    path: '/accounts',
    summary: 'Create an organization (the caller becomes its owner), or, as the operator, a user account with its first key.',
    tag: 'accounts',
    body: CreateAccountBody,
    response: z.union([Account, CreatedUser]),
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'createAccount',
      request: (i) => i.body,
      response: (res: { account: RpcAccount; key?: string; keyId?: string }) =>
        res.key ? { account: account(res.account), key: res.key, keyId: res.keyId, warning: WARNING } : account(res.account),
    },
  }),
  route({
    id: 'accounts.chain',
    method: 'get',
    path: '/accounts/me/chain',
    summary: "The caller's chain of authority: agent → owner account → organization.",
    tag: 'accounts',
    response: Chain,
    auth: 'key',
    principals: ['human', 'agent', 'host'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'getChain',
      request: () => ({}),
      response: (res: {
        chain: Array<{ kind: string; id: string; name: string; relation: string; role?: string }>;
        actingAccountId: string;
        principalKind: string;
        channel: string;
        canChangeAuthority: boolean;
        projectId?: string;
      }) => ({
        chain: res.chain.map((l) => ({ kind: l.kind, id: l.id, name: l.name, relation: l.relation, role: l.role ?? null })),
        actingAccountId: res.actingAccountId,
        principal: { kind: res.principalKind, channel: res.channel, projectId: res.projectId ?? null },
        canChangeAuthority: res.canChangeAuthority,
      }),
    },
  }),
  route({
    id: 'accounts.get',
    method: 'get',
    path: '/accounts/:id',
    summary: 'An account the caller can act in (404 for any other).',
    tag: 'accounts',
    params: AccountParams,
    response: Account,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'getAccount',
      request: (i) => ({ id: i.params.id }),
      response: (res: { account: RpcAccount }) => account(res.account),
    },
  }),
  route({
    id: 'accounts.members.list',
    method: 'get',
    path: '/accounts/:id/members',
    summary: "An organization's members and their roles.",
    tag: 'accounts',
    params: AccountParams,
    query: ListQuery,
    response: list('members', Member, 'MemberList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listMembers',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res: { members: Array<{ account: RpcAccount; role: string; addedAt: string }>; nextCursor?: string }) => ({
        members: res.members.map((m) => ({
          accountId: m.account.id,
          name: m.account.name,
          email: m.account.email ?? null,
          role: m.role,
          addedAt: m.addedAt,
        })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    id: 'accounts.members.add',
    method: 'post',
    path: '/accounts/:id/members',
    summary: "Add a person (a user account) to an organization, or change their role (201 when added, 200 otherwise).",
    tag: 'accounts',
    params: AccountParams,
    body: z.object({ accountId: AccountId, role: Role }).strict().meta({ id: 'AddMemberRequest' }),
    response: Member,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'addMember',
      request: (i) => ({ accountId: i.params.id, memberId: i.body.accountId, role: i.body.role }),
      response: (res: { member: { account: RpcAccount; role: string; addedAt: string }; created: boolean }) =>
        reply(
          {
            accountId: res.member.account.id,
            name: res.member.account.name,
            email: res.member.account.email ?? null,
            role: res.member.role,
            addedAt: res.member.addedAt,
          },
          { status: res.created ? 201 : 200 },
        ),
    },
  }),
  route({
    id: 'accounts.members.remove',
    method: 'delete',
    path: '/accounts/:id/members/:memberId',
    summary: 'Remove a member (anyone may leave; an organization keeps at least one owner).',
    tag: 'accounts',
    params: z.object({ id: AccountId, memberId: AccountId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'removeMember',
      request: (i) => ({ accountId: i.params.id, memberId: i.params.memberId }),
      response: success,
    },
  }),
  route({
    id: 'accounts.settings.get',
    method: 'get',
    path: '/accounts/:id/settings',
    summary: "An account's settings document, with its ETag.",
    tag: 'accounts',
    params: AccountParams,
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'getSettings',
      request: (i) => ({ accountId: i.params.id }),
      response: settingsReply,
    },
  }),
  route({
    id: 'accounts.settings.replace',
    method: 'put',
    path: '/accounts/:id/settings',
    summary: 'Replace the settings (absent fields take their defaults); If-Match guards against lost updates.',
    tag: 'accounts',
    params: AccountParams,
    headers: IfMatch,
    body: JsonObject.meta({ id: 'AccountSettingsDocument', description: 'The whole document; see AccountSettings for its fields.' }),
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'replaceSettings',
      request: (i) => ({ accountId: i.params.id, documentJson: JSON.stringify(i.body), ifMatch: i.headers['if-match'] }),
      response: settingsReply,
    },
  }),
  route({
    id: 'accounts.settings.patch',
    method: 'patch',
    path: '/accounts/:id/settings',
    summary: 'Merge into the settings (JSON merge patch: null brings a field back to its default); If-Match as for PUT.',
    tag: 'accounts',
    params: AccountParams,
    headers: IfMatch,
    body: JsonObject.meta({ id: 'AccountSettingsPatch', description: 'A JSON merge patch (RFC 7396) of AccountSettings.' }),
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'patchSettings',
      request: (i) => ({ accountId: i.params.id, patchJson: JSON.stringify(i.body), ifMatch: i.headers['if-match'] }),
      response: settingsReply,
    },
  }),
  route({
    id: 'grants.list',
    method: 'get',
    path: '/accounts/:id/standing-grants',
    summary: 'Live standing grants given by an account (a project-scoped key sees its project only).',
    tag: 'grants',
    params: AccountParams,
    query: ListQuery,
    response: list('grants', Grant, 'StandingGrantList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listGrants',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res: { grants: RpcGrant[]; nextCursor?: string }) => ({ grants: res.grants.map(grantJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'grants.create',
    method: 'post',
    path: '/accounts/:id/standing-grants',
    summary:
      'Give a grantee verbs on a scope (201), or widen the live grant for the same grantee and scope (200). A person only, never through MCP.',
    tag: 'grants',
    params: AccountParams,
    body: GrantBody,
    response: Grant,
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'createGrant',
      request: (i) => ({ accountId: i.params.id, ...i.body }),
      response: (res: { grant: RpcGrant; outcome: string }) => reply(grantJson(res.grant), { status: res.outcome === 'created' ? 201 : 200 }),
    },
  }),
  route({
    id: 'grants.held',
    method: 'get',
    path: '/standing-grants/held',
    summary: 'Live grants the caller holds (given to its agent id, its person or its acting account).',
    tag: 'grants',
    query: ListQuery,
    response: list('grants', Grant, 'HeldGrantList'),
    auth: 'key',
    principals: ['human', 'agent', 'host'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listHeldGrants',
      request: page,
      response: (res: { grants: RpcGrant[]; nextCursor?: string }) => ({ grants: res.grants.map(grantJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'grants.delete',
    method: 'delete',
    path: '/standing-grants/:id',
    summary: 'Delete a standing grant at once (deleting it again succeeds).',
    tag: 'grants',
    params: z.object({ id: GrantId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: { kind: 'rpc', service: 'accounts', method: 'deleteGrant', request: (i) => ({ id: i.params.id }), response: success },
  }),
  route({
    id: 'signingKey.get',
    method: 'get',
    path: '/accounts/:id/signing-key',
    summary: "The account's current Ed25519 public key (JWK) and the retired keys that still verify.",
    tag: 'signing',
    params: AccountParams,
    response: SigningKey,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'getSigningKey',
      request: (i) => ({ accountId: i.params.id }),
      response: signingKeyJson,
    },
  }),
  route({
    id: 'signingKey.rotate',
    method: 'post',
    path: '/accounts/:id/signing-key/rotate',
    summary: 'Make a new current signing key; the old public key verifies for the grace period.',
    tag: 'signing',
    params: AccountParams,
    query: z.object({
      gracePeriodHours: z.coerce
        .number()
        .int()
        .min(0)
        .max(8760)
        .optional()
        .describe('How long the old key still verifies. Default: settings.signing.gracePeriodHours (168).'),
    }),
    response: SigningKey,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'rotateSigningKey',
      request: (i) => ({ accountId: i.params.id, gracePeriodHours: i.query.gracePeriodHours }),
      response: signingKeyJson,
    },
  }),
  route({
    id: 'signatures.sign',
    method: 'post',
    path: '/accounts/:id/signatures',
    summary: "Sign a JSON payload with the account's current key: a compact JWS (EdDSA, kid in the header).",
    tag: 'signing',
    params: AccountParams,
    body: SignBody,
    response: z.object({ signature: z.string(), keyId: z.string(), algorithm: z.literal('EdDSA') }).meta({ id: 'Signature' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'sign',
      request: (i) => ({ accountId: i.params.id, payloadJson: JSON.stringify(i.body.payload) }),
      response: (res: { jws: string; keyId: string }) => ({ signature: res.jws, keyId: res.keyId, algorithm: 'EdDSA' as const }),
    },
  }),
  route({
    id: 'signatures.verify',
    method: 'post',
    path: '/accounts/:id/signatures/verify',
    summary: "Verify a signature with the account's current key or a retired one inside its grace period.",
    tag: 'signing',
    params: AccountParams,
    body: z
      .object({ signature: z.string().min(1, 'is required').max(200_000) })
      .strict()
      .meta({ id: 'VerifySignatureRequest' }),
    response: z
      .object({
        valid: z.boolean(),
        keyId: Nullable(z.string()),
        payload: z.unknown().describe('The signed JSON value, when valid.'),
        reason: Nullable(z.enum(['malformed', 'unknown_key', 'key_expired', 'bad_signature'])),
      })
      .meta({ id: 'SignatureVerification' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'verifySignature',
      request: (i) => ({ accountId: i.params.id, jws: i.body.signature }),
      response: (res: { valid: boolean; keyId?: string; payloadJson?: string; reason?: string }) => {
        let payload: unknown = null;
        try {
          payload = res.payloadJson !== undefined ? JSON.parse(res.payloadJson) : null;
        } catch {
          payload = res.payloadJson;
        }
        return { valid: res.valid, keyId: res.keyId ?? null, payload, reason: res.reason ?? null };
      },
    },
  }),
  route({
    id: 'hosts.list',
    method: 'get',
    path: '/accounts/:id/hosts',
    summary: 'Hosts (machines) paired to an account.',
    tag: 'hosts',
    params: AccountParams,
    query: ListQuery,
    response: list('hosts', Host, 'HostList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listHosts',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res: { hosts: RpcHost[]; nextCursor?: string }) => ({ hosts: res.hosts.map(hostJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'hosts.pair',
    method: 'post',
    path: '/accounts/:id/hosts',
    summary: 'Pair a machine: the host and its credential (svch_…, shown once). A person only.',
    tag: 'hosts',
    params: AccountParams,
    body: z.object({ name: Name }).strict().meta({ id: 'PairHostRequest' }),
    response: z.object({ host: Host, credential: z.string(), warning: z.string() }).meta({ id: 'PairedHost' }),
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'pairHost',
      request: (i) => ({ accountId: i.params.id, name: i.body.name }),
      response: (res: { host: RpcHost; credential: string }) => ({ host: hostJson(res.host), credential: res.credential, warning: WARNING }),
    },
  }),
  route({
    id: 'hosts.unpair',
    method: 'delete',
    path: '/hosts/:hostId',
    summary: 'Unpair a host: its credential stops working (unpairing again succeeds).',
    tag: 'hosts',
    params: z.object({ hostId: HostId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: { kind: 'rpc', service: 'accounts', method: 'unpairHost', request: (i) => ({ hostId: i.params.hostId }), response: success },
  }),
  route({
    id: 'hosts.call',
    method: 'post',
    path: '/hosts/:hostId/call',
    summary: "Relay a tool call to a paired host and return its answer (503 host_offline when it is not connected).",
    tag: 'hosts',
    params: z.object({ hostId: HostId }),
    body: z
      .object({
        tool: z
          .string()
          .min(1, 'is required')
          .max(200)
          .regex(/^[A-Za-z0-9_.:/-]+$/, 'may hold letters, digits and _ . : / - only'),
        arguments: JsonObject.optional(),
        timeoutMs: z.number().int().min(100).max(8000).optional().describe('Default: settings.hosts.callTimeoutMs (5000).'),
      })
      .strict()
      .meta({ id: 'HostCallRequest' }),
    response: z
      .object({ callId: z.string(), hostId: z.string(), tool: z.string(), result: z.unknown(), durationMs: z.number().int() })
      .meta({ id: 'HostCallResult' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'callHost',
      request: (i) => ({
        hostId: i.params.hostId,
        tool: i.body.tool,
        argumentsJson: JSON.stringify(i.body.arguments ?? {}),
        timeoutMs: i.body.timeoutMs,
      }),
      response: (res: { callId: string; hostId: string; tool: string; resultJson: string; durationMs: number }) => ({
        callId: res.callId,
        hostId: res.hostId,
        tool: res.tool,
        result: JSON.parse(res.resultJson),
        durationMs: res.durationMs,
      }),
    },
  }),
  route({
    id: 'accounts.audit',
    method: 'get',
    path: '/accounts/:id/audit',
    summary: "The account's audit trail, newest first: every authority change and who made it (owners and admins).",
    tag: 'accounts',
    params: AccountParams,
    query: ListQuery.extend({ action: z.string().regex(/^[a-z_]+\.[a-z_]+$/, 'must look like grant.created').optional() }),
    response: list('events', AuditEvent, 'AuditEventList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      kind: 'rpc',
      service: 'accounts',
      method: 'listAudit',
      request: (i) => ({ accountId: i.params.id, ...page(i), action: i.query.action }),
      response: (res: {
        events: Array<{
          id: string;
          accountId: string;
          action: string;
          actor?: RpcPrincipal;
          targetKind?: string;
          targetId?: string;
          dataJson: string;
          occurredAt: string;
        }>;
        nextCursor?: string;
      }) => ({
        events: res.events.map((e) => ({
          id: e.id,
          accountId: e.accountId,
          action: e.action,
          actor: principalRef(e.actor),
          target: e.targetKind && e.targetId ? { kind: e.targetKind, id: e.targetId } : null,
          data: JSON.parse(e.dataJson),
          occurredAt: e.occurredAt,
        })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
];
