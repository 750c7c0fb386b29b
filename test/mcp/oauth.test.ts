import { createHash, randomBytes } from 'node:crypto';

import { refreshAuthorization, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { legacyClient, rawPost } from '../support/mcp';
import { authorize, Browser, formOf, MemoryOAuthProvider } from '../support/oauth';
import { startTestStack, type TestStack } from '../support/stack';

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
