import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { tempDir } from '../support/backends';
import { rawPost } from '../support/mcp';
import { authorizationUrl, authorize, Browser, pkce } from '../support/oauth';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';

/**
 * A client known by its Client ID Metadata Document (docs/oauth.md): its `client_id` is the https
 * URL of a JSON document about itself, which the authorization server fetches when it first sees
 * it. Here the document is served over real TLS by a local server whose certificate the stack
 * trusts (NODE_EXTRA_CA_CERTS, so the stack runs as its own process), with its loopback address
 * allowed by SVC_OAUTH_METADATA_ALLOWED_HOSTS (without it, private addresses are refused: tested in
 * oauth.test.ts). The stack runs on its embedded backends in both passes.
 */
const REDIRECT = 'http://127.0.0.1:9/callback';
const KEY = `svc_${'c'.repeat(64)}`;
let dir: string;
let docs: https.Server;
let fetched: string[] = [];
let docUrl: string;
let base: string;
let child: ReturnType<typeof spawnSvc>;

beforeAll(async () => {
  dir = tempDir();
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' }); // prettier-ignore
  const documents: Record<string, (url: string) => unknown> = {
    '/client.json': (url) => ({
      client_id: url,
      client_name: 'Metadata Assistant',
      client_uri: 'https://127.0.0.1/',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
    // A document that names another client: not this URL's.
    '/impostor.json': () => ({ client_id: 'https://example.com/client.json', client_name: 'Impostor', redirect_uris: [REDIRECT] }),
  };
  docs = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    fetched.push(req.url ?? '');
    const make = documents[req.url ?? ''];
    if (!make) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(make(`${origin()}${req.url}`)));
  });
  await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
  docUrl = `${origin()}/client.json`;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = spawnSvc({
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_DATA_DIR: path.join(dir, 'data'),
    SVC_BOOTSTRAP_KEY: KEY,
    NODE_EXTRA_CA_CERTS: cert,
    SVC_OAUTH_METADATA_ALLOWED_HOSTS: '127.0.0.1',
  });
  await waitFor(async () => ((await fetch(`${base}/health`)).ok ? true : undefined), 120_000, 'the stack').catch((err) => {
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  });
}, 150_000);

afterAll(async () => {
  child?.kill('SIGTERM');
  if (child) await exitCode(child);
  await new Promise((resolve) => docs?.close(resolve));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const origin = () => `https://127.0.0.1:${(docs.address() as AddressInfo).port}`;

test('a client known by its metadata document: fetched once over TLS, named as verified on the consent page, then the whole flow', async () => {
  const person = await fetch(`${base}/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'user', name: 'Noor' }),
  }).then((r) => r.json() as Promise<{ key: string }>);
  const p = pkce();
  fetched = [];
  const r = await authorize(new Browser(base), authorizationUrl(base, { clientId: docUrl, challenge: p.challenge, redirectUri: REDIRECT }), {
    key: person.key,
    redirectUri: REDIRECT,
  });
  expect(r.code).toBeTruthy();
  const consent = r.pages.find((html) => html.includes('Allow Metadata Assistant'));
  expect(consent).toContain(`its metadata document, fetched from ${docUrl}`);
  expect(fetched).toEqual(['/client.json']);

  const tok = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: r.code!,
      code_verifier: p.verifier,
      client_id: docUrl,
      redirect_uri: REDIRECT,
      resource: `${base}/mcp`,
    }),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as { access_token: string; refresh_token: string } }));
  expect(tok.status).toBe(200);
  const list = await rawPost(base, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: tok.body.access_token });
  expect(list.status).toBe(200);
  expect(list.body.result.tools.length).toBeGreaterThan(5);
  // A refresh needs no new fetch of the document (it is cached).
  const refreshed = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tok.body.refresh_token, client_id: docUrl }),
  });
  expect(refreshed.status).toBe(200);
  expect(fetched).toEqual(['/client.json']);
}, 60_000);

test('a metadata document that names another client_id than its own URL is refused: no consent, no code', async () => {
  const res = await new Browser(base).request(
    authorizationUrl(base, { clientId: `${origin()}/impostor.json`, challenge: pkce().challenge, redirectUri: REDIRECT }),
  );
  expect(res.status).toBe(400);
  expect(res.location).toBeUndefined();
  expect(res.html).toMatch(/invalid_client|client/i);
});
