import { createSystemTokenSource, PrincipalSigner } from '@svc/kit';
import { accounts } from '@svc/proto';

import { authorizationUrl, authorize, Browser, exchangeCode, pkce, registerClient } from '../support/oauth';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * What a revoked grant holds open ends within a second, as a revoked key's does (docs/oauth.md,
 * "Audit and events"): its streams are held by the key id `oauth:<grant>`, and the gateway that
 * revokes a grant forgets its tokens and ends those streams before it answers; every other gateway
 * does on the accounts service's event, published right after the revocation's commit. A stream
 * still open a second after the revocation fails these tests; one ended by a refresh fails too.
 */

let t: TestStack;
let mia: { key: string; id: string };
const REDIRECT = 'http://127.0.0.1:9/callback';

beforeAll(async () => {
  t = await startTestStack();
  const a = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia' })).body;
  mia = { key: a.key, id: a.account.id };
}, 60_000);
afterAll(() => t?.stop());

const accountsService = () => t.stack.registry.client('accounts', accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService');
const systemToken = () => createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();

/**
 * An event stream of a thread, opened with an API access token of a fresh grant of Mia's;
 * `ended(ms)` waits for it to end by itself, at most `ms` (then it is aborted: not ended).
 */
async function grantStream() {
  const agent = (await t.ok('POST', '/agents', mia.key, { name: 'streamer' })).body as { id: string };
  const thread = (await t.ok('POST', '/threads', mia.key, { agentId: agent.id })).body as { id: string };
  const clientId = await registerClient(t.url, 'Streamer', REDIRECT);
  const { verifier, challenge } = pkce();
  const resource = `${t.url}/v1`;
  const { code } = await authorize(
    new Browser(t.url),
    authorizationUrl(t.url, { clientId, challenge, redirectUri: REDIRECT, resource, scope: 'api:read' }),
    {
      key: mia.key,
      redirectUri: REDIRECT,
    },
  );
  const tokens = await (await exchangeCode(t.url, { code: code!, verifier, clientId, redirectUri: REDIRECT })).json();
  const ac = new AbortController();
  const res = await fetch(`${t.url}/v1/threads/${thread.id}/events`, {
    headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'text/event-stream' },
    signal: ac.signal,
  });
  expect(res.status).toBe(200);
  let ended = false;
  let text = '';
  const reading = (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString('utf8');
      ended = true;
    } catch {
      // aborted: it did not end by itself
    }
  })();
  await until(() => text.includes('\n\n'), 10_000, { what: 'the stream open' });
  return {
    clientId,
    tokens: tokens as { access_token: string; refresh_token: string },
    async ended(ms: number) {
      const timer = setTimeout(() => ac.abort(), ms);
      await reading;
      clearTimeout(timer);
      return { ended, text };
    },
  };
}

test('a grant revoked by its client (on this gateway) ends its open streams within a second', async () => {
  const s = await grantStream();
  const revoked = await fetch(`${t.url}/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: s.tokens.refresh_token, client_id: s.clientId }),
  });
  expect(revoked.status).toBe(200);
  const { ended, text } = await s.ended(1000);
  expect(ended).toBe(true);
  expect(text).toContain('event: error');
});

test('a grant revoked on another gateway (only the accounts service’s event reaches this one) ends its open streams within a second', async () => {
  const s = await grantStream();
  const token = await systemToken();
  const { grants } = await accountsService().listOauthGrants({ userId: mia.id }, { principalToken: token });
  const grantId = grants.find((g) => JSON.parse(g.grantJson).clientId === s.clientId)!.grantId;
  // What another gateway's authorization server does when the client revokes there.
  const { revoked } = await accountsService().revokeOauthGrant(
    { grantId, tokensOnly: false, reason: 'revoked_by_client', userId: '' },
    { principalToken: token },
  );
  expect(revoked).toBe(true);
  const { ended, text } = await s.ended(1000);
  expect(ended).toBe(true);
  expect(text).toContain('event: error');
  expect((await t.call('GET', '/me', { key: s.tokens.access_token })).status).toBe(401);
});

test('a refresh of the grant ends none of its open streams', async () => {
  const s = await grantStream();
  const refreshed = await fetch(`${t.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: s.tokens.refresh_token, client_id: s.clientId }),
  });
  expect(refreshed.status).toBe(200);
  // The refresh is audited and published (accounts.oauth.refreshed) like a revocation; it must not act like one.
  const published = async () =>
    ((await t.ok('GET', `/accounts/${mia.id}/audit?limit=200`, mia.key)).body.events as Array<{ action: string; data: any }>).some(
      (e) => e.action === 'oauth.refreshed' && e.data.clientId === s.clientId,
    );
  await until(published, 10_000, { what: 'the refresh audited' });
  const { ended } = await s.ended(1000);
  expect(ended).toBe(false);
  expect((await t.call('GET', '/me', { key: s.tokens.access_token })).status).toBe(200);
});
