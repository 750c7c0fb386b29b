import http from 'node:http';

import { refreshAuthorization, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { legacyClient, rawPost } from '../support/mcp';
import { authorizationUrl, authorize, Browser, formOf, MemoryOAuthProvider, pkce } from '../support/oauth';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * Sign-in from an MCP client (docs/oauth.md): the official SDK's OAuth client against a running
 * stack (401 → metadata → registration → authorization, the consent approved by posting the real
 * pages' forms → token → tools/list → refresh → revoke → 401), and the refusals tried from outside.
 */

let t: TestStack;
let mia: { key: string; id: string };
let olu: { key: string; id: string };
const REDIRECT = 'http://127.0.0.1:9/callback';

beforeAll(async () => {
  t = await startTestStack();
  const a = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia' })).body;
  mia = { key: a.key, id: a.account.id };
  const b = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Olu' })).body;
  olu = { key: b.key, id: b.account.id };
}, 60_000);
afterAll(() => t?.stop());

const mcpUrl = () => new URL(`${t.url}/mcp`);

/** Connects the SDK client with its OAuth provider; `undefined` when it was sent to authorize. */
async function connect(provider: MemoryOAuthProvider): Promise<Client | undefined> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (err) {
    if (err instanceof UnauthorizedError) return undefined;
    throw err;
  }
}

/** The whole first connection: 401, discovery, registration, the pages, the code, the token. */
async function signIn(provider: MemoryOAuthProvider, key: string, access: 'read' | 'write' = 'write'): Promise<Client> {
  expect(await connect(provider)).toBeUndefined();
  expect(provider.lastAuthorizationUrl).toBeDefined();
  const browser = new Browser(t.url);
  const { code } = await authorize(browser, provider.lastAuthorizationUrl!.href, { key, redirectUri: REDIRECT, access });
  expect(code).toBeTruthy();
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
  await transport.finishAuth(code!);
  const client = await connect(provider);
  expect(client).toBeDefined();
  return client!;
}

const metadata = async () => (await fetch(`${t.url}/.well-known/oauth-authorization-server`)).json();

describe('discovery', () => {
  test('a 401 from /mcp names the protected resource metadata and the scope; the metadata names the authorization server', async () => {
    const res = await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toContain(`resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp"`);
    expect(challenge).toContain('scope="mcp:write"');

    const prm = await (await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${t.url}/mcp`, authorization_servers: [t.url] });
    expect(prm.scopes_supported).toEqual(expect.arrayContaining(['mcp:read', 'mcp:write', 'mcp:toolset:drive']));
    const api = await (await fetch(`${t.url}/.well-known/oauth-protected-resource/v1`)).json();
    expect(api).toMatchObject({ resource: `${t.url}/v1`, authorization_servers: [t.url] });

    const as = await metadata();
    expect(as).toMatchObject({
      issuer: t.url,
      authorization_endpoint: `${t.url}/oauth/authorize`,
      token_endpoint: `${t.url}/oauth/token`,
      registration_endpoint: `${t.url}/oauth/register`,
      revocation_endpoint: `${t.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      client_id_metadata_document_supported: true,
    });
    expect(as.grant_types_supported).not.toContain('implicit');
    // Another Host header does not move the endpoints.
    const spoofed = await new Promise<any>((resolve, reject) => {
      const u = new URL(`${t.url}/.well-known/oauth-authorization-server`);
      http
        .get({ host: u.hostname, port: u.port, path: u.pathname, headers: { host: 'evil.example' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(JSON.parse(text)));
        })
        .on('error', reject);
    });
    expect(spoofed.token_endpoint).toBe(`${t.url}/oauth/token`);
  });

  test('pasted API keys keep working on /mcp', async () => {
    const client = await legacyClient(t.url, mia.key);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(10);
    await client.close();
  });
});

describe('the SDK client, end to end', () => {
  test('401 → metadata → registration → consent → token → tools/list → refresh → reuse revokes the grant → 401', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT);
    const client = await signIn(provider, mia.key);
    expect(provider.info?.client_id).toBeTruthy();
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['whoami', 'write_drive_file']));
    const who = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(who.structuredContent)).toContain(mia.id);
    // The person, with the grant as the key: not an API key of theirs.
    expect(who.structuredContent).toMatchObject({ kind: 'human', userId: mia.id, keyId: expect.stringMatching(/^oauth:/) });
    await client.close();

    // Refresh: a new pair; the old refresh token is spent.
    const first = provider.saved!;
    expect(first.refresh_token).toBeTruthy();
    expect(first.expires_in).toBeLessThanOrEqual(600);
    const as = await metadata();
    const refreshed = await refreshAuthorization(t.url, {
      metadata: as,
      clientInformation: provider.info!,
      refreshToken: first.refresh_token!,
      resource: mcpUrl(),
    });
    expect(refreshed.access_token).not.toBe(first.access_token);
    expect(refreshed.refresh_token).not.toBe(first.refresh_token);
    expect((await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: refreshed.access_token })).status).toBe(200);

    // The spent refresh token again: refused, and the whole grant goes with it.
    await expect(
      refreshAuthorization(t.url, { metadata: as, clientInformation: provider.info!, refreshToken: first.refresh_token!, resource: mcpUrl() }),
    ).rejects.toThrow(/invalid_grant|already used|grant/i);
    const after = await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: refreshed.access_token });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('resource_metadata=');
    await expect(
      refreshAuthorization(t.url, { metadata: as, clientInformation: provider.info!, refreshToken: refreshed.refresh_token!, resource: mcpUrl() }),
    ).rejects.toThrow();
  });

  test('revocation (RFC 7009) of the refresh token ends the grant: the access token answers 401', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT);
    const client = await signIn(provider, mia.key);
    await client.close();
    const tokens = provider.saved!;
    const res = await fetch(`${t.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.refresh_token!, client_id: provider.info!.client_id }),
    });
    expect(res.status).toBe(200);
    expect((await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: tokens.access_token })).status).toBe(401);
  });
});

// By hand: what a client could send that the SDK would not. ---------------------------------------

async function register(redirectUris = [REDIRECT], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${t.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Hand Client', redirect_uris: redirectUris, token_endpoint_auth_method: 'none', ...extra }),
  });
  const body = await res.json();
  expect(res.status).toBe(201);
  return body.client_id;
}

const authUrl = (o: { clientId: string; challenge: string; redirectUri?: string; resource?: string; scope?: string }) =>
  authorizationUrl(t.url, { redirectUri: REDIRECT, ...o });

async function token(form: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${t.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: await res.json() };
}

/** A code for a fresh client, approved by `key` with `access`. */
async function codeFor(o: { key?: string; access?: 'read' | 'write'; resource?: string; scope?: string; subject?: string } = {}) {
  const clientId = await register();
  const p = pkce();
  const r = await authorize(new Browser(t.url), authUrl({ clientId, challenge: p.challenge, resource: o.resource, scope: o.scope }), {
    key: o.key ?? mia.key,
    redirectUri: REDIRECT,
    access: o.access,
    subject: o.subject,
  });
  expect(r.code).toBeTruthy();
  return { clientId, code: r.code!, ...p };
}

const exchange = (c: { clientId: string; code: string; verifier: string }, resource = `${t.url}/mcp`) =>
  token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, client_id: c.clientId, redirect_uri: REDIRECT, resource });

const mcpStatus = async (accessToken: string) => (await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: accessToken })).status;

describe('refusals', () => {
  test('a wrong PKCE verifier is refused; so is an authorization request without PKCE', async () => {
    const c = await codeFor();
    const bad = await exchange({ ...c, verifier: pkce().verifier });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_grant');
    const noPkce = await new Browser(t.url).request(
      authUrl({ clientId: c.clientId, challenge: '' }).replace(/&code_challenge=&code_challenge_method=S256/, ''),
    );
    expect(noPkce.location ?? '').toMatch(/error=invalid_request/);
  });

  test('a redirect URI the client did not register is refused without redirecting; loopback ports are exact for web clients', async () => {
    const clientId = await register();
    for (const redirectUri of ['http://127.0.0.1:9/other', 'https://evil.example/callback', 'http://127.0.0.1:10/callback']) {
      const res = await new Browser(t.url).request(authUrl({ clientId, challenge: pkce().challenge, redirectUri }));
      expect(res.status).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.html).toContain('redirect_uri');
    }
    // A native client's loopback redirect may come back on any port (RFC 8252).
    const native = await register(['http://127.0.0.1/callback'], { application_type: 'native' });
    const res = await new Browser(t.url).request(
      authUrl({ clientId: native, challenge: pkce().challenge, redirectUri: 'http://127.0.0.1:53412/callback' }),
    );
    expect(res.status).toBe(303);
    expect(res.location).toContain('/oauth/interaction/');
  });

  test('a code used twice is refused, and the tokens it gave are revoked', async () => {
    const c = await codeFor();
    const first = await exchange(c);
    expect(first.status).toBe(200);
    expect(await mcpStatus(first.body.access_token)).toBe(200);
    const second = await exchange(c);
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');
    expect(await mcpStatus(first.body.access_token)).toBe(401);
  });

  test('a token is bound to its resource: an MCP token is refused by the API, an API token by /mcp, an unknown resource gets none', async () => {
    const m = await exchange(await codeFor());
    expect(m.status).toBe(200);
    const onApi = await fetch(`${t.url}/v1/me`, { headers: { authorization: `Bearer ${m.body.access_token}` } });
    expect(onApi.status).toBe(401);
    expect((await onApi.json()).error.code).toBe('invalid_token');
    expect(onApi.headers.get('www-authenticate')).toContain('oauth-protected-resource/v1');

    const c = await codeFor({ resource: `${t.url}/v1`, scope: 'api:read' });
    const a = await exchange(c, `${t.url}/v1`);
    expect(a.status).toBe(200);
    const me = await fetch(`${t.url}/v1/me`, { headers: { authorization: `Bearer ${a.body.access_token}` } });
    expect(me.status).toBe(200);
    expect(await mcpStatus(a.body.access_token)).toBe(401);
    // api:read: nothing with effects.
    const write = await fetch(`${t.url}/v1/drive/folders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.body.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    });
    expect(write.status).toBe(403);
    expect((await write.json()).error.code).toBe('read_only_token');

    const other = await exchange(await codeFor(), 'https://evil.example/mcp');
    expect(other.status).toBe(400);
    expect(other.body.error).toBe('invalid_target');
  });

  test('a consent posted without its CSRF token, or from another origin, is refused', async () => {
    const clientId = await register();
    const browser = new Browser(t.url);
    let res = await browser.request(authUrl({ clientId, challenge: pkce().challenge }));
    res = await browser.request(res.location!);
    const login = formOf(res.html);
    res = await browser.request(login.action, { form: { ...login.fields, api_key: mia.key } });
    res = await browser.request(res.location!);
    res = await browser.request(res.location!);
    expect(res.html).toContain('Allow Hand Client');
    expect(res.html).toContain(mia.id);
    const consent = formOf(res.html);
    const { csrf, ...withoutCsrf } = consent.fields;
    const noToken = await browser.request(consent.action, { form: { ...withoutCsrf, decision: 'approve' } });
    expect(noToken.status).toBe(403);
    expect(noToken.location).toBeUndefined();
    const forged = await browser.request(consent.action, { form: { ...withoutCsrf, csrf: csrf!.slice(1) + 'A', decision: 'approve' } });
    expect(forged.status).toBe(403);
    const crossOrigin = await browser.request(consent.action, {
      form: { ...consent.fields, decision: 'approve' },
      headers: { origin: 'https://evil.example' },
    });
    expect(crossOrigin.status).toBe(403);
    // The page's own post still works.
    const ok = await browser.request(consent.action, { form: { ...consent.fields, decision: 'approve', access: 'write' } });
    expect(ok.status).toBe(303);
  });

  test('a client metadata document at a private address is never fetched', async () => {
    const res = await new Browser(t.url).request(authUrl({ clientId: 'https://127.0.0.1:4443/client.json', challenge: pkce().challenge }));
    expect(res.status).toBe(400);
    expect(res.location).toBeUndefined();
    expect(res.html).toMatch(/invalid_client/);
  });

  test('sign-in takes a person’s key only: an agent key, a project key and a bad key are refused', async () => {
    const agentId = (await t.ok('POST', '/agents', mia.key, { name: 'helper' })).body.id;
    const agentKey = (await t.ok('POST', `/agents/${agentId}/keys`, mia.key, { name: 'k' })).body.key;
    const projectKey = (await t.ok('POST', '/me/api-keys', mia.key, { name: 'p', projectId: 'proj1' })).body.key;
    for (const key of [agentKey, projectKey, 'svc_' + '0'.repeat(64)]) {
      const clientId = await register();
      const r = await authorize(new Browser(t.url), authUrl({ clientId, challenge: pkce().challenge }), { key, redirectUri: REDIRECT });
      expect(r.code).toBeUndefined();
      expect(r.last.status).toBe(401);
      expect(r.last.html).toContain('role="alert"');
    }
  });
});

describe('scopes', () => {
  test('read-only chosen on the consent page: only tools without effects are listed or called', async () => {
    const c = await codeFor({ access: 'read' });
    const tok = await exchange(c);
    expect(tok.body.scope).toBe('mcp:read');
    const list = await rawPost(t.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: tok.body.access_token });
    const names: string[] = list.body.result.tools.map((x: { name: string }) => x.name);
    expect(names).toContain('list_drive');
    expect(names).not.toContain('write_drive_file');
    const call = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'drive_create_folder', arguments: { name: 'nope' } } },
      { key: tok.body.access_token },
    );
    expect(JSON.stringify(call.body)).toMatch(/read_only/);
  });

  test('an agent as the subject, chosen on the consent page: the token acts as that agent, with only its tools; never another’s agent; ends with the agent', async () => {
    const agent = (await t.ok('POST', '/agents', mia.key, { name: 'Reader', tools: ['list_drive', 'drive_stat'] })).body as { id: string };
    // The consent page offers the person's own agents.
    const clientId = await register();
    const page = await authorize(new Browser(t.url), authUrl({ clientId, challenge: pkce().challenge }), {
      key: mia.key,
      redirectUri: REDIRECT,
      decision: 'deny',
    });
    expect(page.pages.some((html) => html.includes(`value="${agent.id}"`) && html.includes('Your agent Reader'))).toBe(true);

    const tok = await exchange(await codeFor({ subject: agent.id }));
    expect(tok.status).toBe(200);
    const list = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { key: tok.body.access_token, headers: { 'x-mcp-toolsets': 'all' } },
    );
    const names: string[] = list.body.result.tools.map((x: { name: string }) => x.name).sort();
    expect(names).toEqual(expect.arrayContaining(['drive_stat', 'list_drive']));
    expect(names).not.toContain('write_drive_file');
    expect(names).not.toContain('list_threads');
    const api = await exchange(await codeFor({ subject: agent.id, resource: `${t.url}/v1`, scope: 'api:read' }), `${t.url}/v1`);
    const me = await fetch(`${t.url}/v1/me`, { headers: { authorization: `Bearer ${api.body.access_token}` } });
    expect(await me.json()).toMatchObject({ agentId: agent.id });

    // Another person's agent cannot be chosen: the consent is refused and no code is issued.
    const other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Other' })).body as { key: string };
    const theirs = (await t.ok('POST', '/agents', other.key, { name: 'Theirs' })).body as { id: string };
    const refused = await authorize(new Browser(t.url), authUrl({ clientId: await register(), challenge: pkce().challenge }), {
      key: mia.key,
      redirectUri: REDIRECT,
      subject: theirs.id,
    });
    expect([refused.code, refused.last.status]).toEqual([undefined, 400]);

    // The agent deleted: its tokens act no more (a token already in use, and a new one from the refresh token).
    expect(await mcpStatus(tok.body.access_token)).toBe(200);
    await t.ok('DELETE', `/agents/${agent.id}`, mia.key);
    await until(async () => (await mcpStatus(tok.body.access_token)) === 401, 10_000, { what: 'the deleted agent’s token refused' });
  });

  test('a toolset scope limits the tools to its area', async () => {
    const tok = await exchange(await codeFor({ scope: 'mcp:write mcp:toolset:drive' }));
    expect(tok.status).toBe(200);
    const list = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { key: tok.body.access_token, headers: { 'x-mcp-toolsets': 'all' } },
    );
    const names: string[] = list.body.result.tools.map((x: { name: string }) => x.name);
    expect(names).toContain('drive_stat');
    expect(names.filter((n) => !n.startsWith('drive_') && n !== 'list_drive' && n !== 'read_drive_file' && n !== 'write_drive_file')).toEqual([
      'search_tools',
      'call_tool',
    ]);
    const outside = await rawPost(
      t.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_threads', arguments: {} } },
      { key: tok.body.access_token },
    );
    expect(JSON.stringify(outside.body)).not.toContain('"threads"');
    expect(outside.body.error ?? outside.body.result?.isError).toBeTruthy();
    // The refusal names what refuses it: the token's scopes, not an agent's list.
    expect(JSON.stringify(outside.body)).toContain("This access token's toolset scopes (drive) do not include list_threads.");
  });

  test('a token never mints an API key nor changes authority', async () => {
    const tok = await exchange(await codeFor());
    const call = await rawPost(
      t.url,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'call_tool', arguments: { name: 'me_api_keys_create', arguments: { name: 'escape' } } },
      },
      { key: tok.body.access_token },
    );
    expect(JSON.stringify(call.body)).toMatch(/oauth_token_cannot_mint_keys/);
    const api = await exchange(await codeFor({ resource: `${t.url}/v1`, scope: 'api:write' }), `${t.url}/v1`);
    const mint = await fetch(`${t.url}/v1/me/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.body.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'escape' }),
    });
    expect(mint.status).toBe(403);
    const grant = await fetch(`${t.url}/v1/accounts/${mia.id}/standing-grants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.body.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ granteeKind: 'account', granteeId: olu.id, verbs: ['read'], scope: 'account' }),
    });
    expect(grant.status).toBe(403);
    expect((await grant.json()).error.code).toBe('human_principal_required');
  });
});

describe('connected apps', () => {
  test('the page lists the person’s grants only, and revoking one ends its tokens at once', async () => {
    const c = await codeFor();
    const tok = await exchange(c);
    const theirs = await exchange(await codeFor({ key: olu.key }));
    expect(await mcpStatus(tok.body.access_token)).toBe(200);
    const browser = new Browser(t.url);
    let page = await browser.request('/oauth/apps');
    expect(page.html).toContain('name="api_key"');
    const signin = formOf(page.html);
    page = await browser.request(signin.action, { form: { ...signin.fields, api_key: mia.key } });
    expect(page.status).toBe(303);
    page = await browser.request('/oauth/apps');
    expect(page.status).toBe(200);
    expect(page.html).toContain('Hand Client');
    expect(page.html).toContain(c.clientId);
    expect(page.html).not.toContain(olu.id);
    const index = [...page.html.matchAll(/<form method="post" action="([^"]*)">/g)].findIndex(
      (m, i) =>
        m[1] === '/oauth/apps/revoke' && formOf(page.html, i).fields.grant !== undefined && page.html.indexOf(c.clientId) < page.html.indexOf(m[0]),
    );
    const revoke = formOf(page.html, index);
    const done = await browser.request(revoke.action, { form: revoke.fields });
    expect(done.status).toBe(200);
    expect(done.html).toContain('disconnected');
    expect(await mcpStatus(tok.body.access_token)).toBe(401);
    expect(await mcpStatus(theirs.body.access_token)).toBe(200);
    // Another person's grant cannot be revoked from this session.
    const other = await browser.request(revoke.action, { form: { ...revoke.fields, grant: 'not-mine-grant-id' } });
    expect(other.html).toContain('was not connected');
  });

  test('pages: script files of this origin only where passkeys are offered (none inline, no eval), framing refused, HttpOnly SameSite cookies, labelled fields', async () => {
    const browser = new Browser(t.url);
    const res = await browser.request('/oauth/apps');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|nonce-|sha256-/);
    const scripts = [...res.html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/gi)].map((m) => [/src="([^"]+)"/.exec(m[1]!)?.[1], m[2]]);
    expect(scripts).toEqual([
      ['/oauth/static/webauthn.js', ''],
      ['/oauth/static/passkeys.js', ''],
    ]);
    for (const [src] of scripts) {
      const js = await fetch(`${t.url}${src}`);
      expect([js.status, js.headers.get('content-type'), js.headers.get('x-content-type-options')]).toEqual([
        200,
        'text/javascript; charset=utf-8',
        'nosniff',
      ]);
    }
    // A page that offers no passkey allows no script at all.
    const refused = await browser.request('/oauth/signin', { form: { api_key: 'x' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-security-policy')).not.toMatch(/script-src/);
    expect(refused.html).not.toMatch(/<script/i);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.html).toMatch(/<label for="api-key">/);
    const cookie = res.headers.getSetCookie().join('\n');
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    // Loopback over plain HTTP: not Secure (a real host gets Secure).
    expect(cookie).not.toMatch(/Secure/);
    const css = await fetch(`${t.url}/oauth/static/oauth.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
  });
});

describe('audit and events', () => {
  test('authorizations, refreshes, reuse and revocations are audited in the person’s account', async () => {
    const c = await codeFor({ resource: `${t.url}/v1`, scope: 'api:read' });
    const tok = await exchange(c, `${t.url}/v1`);
    const revoked = await fetch(`${t.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tok.body.refresh_token, client_id: c.clientId }),
    });
    expect(revoked.status).toBe(200);

    const audit = (await t.ok('GET', `/accounts/${mia.id}/audit?limit=200`, mia.key)).body.events as Array<{ action: string; data: any }>;
    const mine = audit.filter((e) => e.data?.clientId === c.clientId);
    expect(mine.map((e) => e.action)).toEqual(expect.arrayContaining(['oauth.authorized', 'oauth.grant_revoked']));
    expect(mine.find((e) => e.action === 'oauth.grant_revoked')!.data.reason).toBe('revoked_by_client');

    // A refresh, and the reuse of the spent refresh token: both audited.
    const d = await codeFor();
    const first = await exchange(d);
    const second = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: d.clientId });
    expect(second.status).toBe(200);
    const reused = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: d.clientId });
    expect(reused.body.error).toBe('invalid_grant');
    const trail = (await t.ok('GET', `/accounts/${mia.id}/audit?limit=200`, mia.key)).body.events as Array<{ action: string; data: any }>;
    const theirs = trail.filter((e) => e.data?.clientId === d.clientId);
    expect(theirs.map((e) => e.action)).toEqual(expect.arrayContaining(['oauth.authorized', 'oauth.refreshed', 'oauth.grant_revoked']));
    expect(theirs.find((e) => e.action === 'oauth.grant_revoked')!.data.reason).toBe('refresh_token_reused');
  });
});

// Last: it spends this address's registrations.
describe('registration', () => {
  test('an address registers at most 100 clients in ten minutes (429 with Retry-After past it)', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < 101 && !refused; i++) {
      const res = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: `flood ${i}`, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(201);
    }
    expect(refused).toBeDefined();
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await refused!.json()).error).toBe('temporarily_unavailable');
  });
});
