import { createHash, randomBytes } from 'node:crypto';

import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * A person's browser, as far as the OAuth pages need one: cookies kept by name and path (sent
 * where their path covers the request), redirects seen one by one, forms posted with what the
 * page gave (its CSRF token) unless a test leaves it out.
 */
export class Browser {
  private readonly jar = new Map<string, { name: string; value: string; path: string }>();

  constructor(readonly base: string) {}

  private cookieHeader(url: URL): string {
    return [...this.jar.values()]
      .filter((c) => url.pathname.startsWith(c.path))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  private keep(url: URL, res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const path =
        attrs
          .map((a) => a.trim())
          .find((a) => /^path=/i.test(a))
          ?.slice(5) ?? url.pathname;
      const expired = attrs.some((a) => /^max-age=0$/i.test(a.trim()) || /^expires=thu, 01 jan 1970/i.test(a.trim()));
      if (expired || value === '') this.jar.delete(`${name}|${path}`);
      else this.jar.set(`${name}|${path}`, { name, value, path });
    }
  }

  /** One request, redirects not followed. */
  async request(
    target: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; location?: string; html: string; headers: Headers }> {
    const url = new URL(target, this.base);
    const headers: Record<string, string> = { ...init.headers };
    const cookie = this.cookieHeader(url);
    if (cookie) headers.cookie = cookie;
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
    this.keep(url, res);
    const location = res.headers.get('location') ?? undefined;
    return { status: res.status, location: location && new URL(location, url).href, html: await res.text(), headers: res.headers };
  }
}

/** The form of a page: its action and hidden fields. */
export function formOf(html: string, index = 0): { action: string; fields: Record<string, string> } {
  const forms = [...html.matchAll(/<form method="post" action="([^"]*)">([\s\S]*?)<\/form>/g)];
  const form = forms[index];
  if (!form) throw new Error(`no form ${index} on the page:\n${html.slice(0, 2000)}`);
  const fields: Record<string, string> = {};
  for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields[m[1]!] = decode(m[2]!);
  return { action: decode(form[1]!), fields };
}

const decode = (s: string) => s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));

/**
 * Drives an authorization from its URL to the code, as a person would: the sign-in page (with
 * `key`), then the consent page (`access`, and `subject`: who the tokens act as, the person by
 * default or an agent's id), following each redirect. Answers the code, or the last
 * page when it stops elsewhere.
 */
export async function authorize(
  browser: Browser,
  authorizationUrl: string,
  o: { key: string; redirectUri: string; access?: 'read' | 'write'; decision?: 'approve' | 'deny'; subject?: string },
): Promise<{ code?: string; error?: string; pages: string[]; last: { status: number; html: string } }> {
  let next: string | undefined = authorizationUrl;
  const pages: string[] = [];
  for (let hops = 0; next && hops < 20; hops++) {
    if (next.startsWith(o.redirectUri)) {
      const q = new URL(next).searchParams;
      return { code: q.get('code') ?? undefined, error: q.get('error') ?? undefined, pages, last: { status: 303, html: '' } };
    }
    const res = await browser.request(next);
    if (res.location) {
      next = res.location;
      continue;
    }
    if (res.status !== 200) return { pages, last: res };
    pages.push(res.html);
    const form = formOf(res.html);
    const fields = res.html.includes('name="api_key"')
      ? { ...form.fields, api_key: o.key }
      : { ...form.fields, decision: o.decision ?? 'approve', access: o.access ?? 'write', ...(o.subject ? { subject: o.subject } : {}) };
    const posted = await browser.request(form.action, { form: fields });
    if (!posted.location) return { pages, last: posted };
    next = posted.location;
  }
  throw new Error(`the authorization did not end: ${next}`);
}

/** The SDK's client side of OAuth, in memory: what a desktop app would keep in its store. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  lastAuthorizationUrl?: URL;

  constructor(
    readonly redirectUri: string,
    readonly metadata: Partial<OAuthClientMetadata> = {},
  ) {}

  get redirectUrl(): string {
    return this.redirectUri;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Assistant',
      redirect_uris: [this.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...this.metadata,
    } as OAuthClientMetadata;
  }

  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.lastAuthorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A PKCE pair (S256): the verifier the client keeps, the challenge it sends. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** An authorization request's URL on the stack at `base` (code flow, PKCE S256, MCP resource and scope by default). */
export function authorizationUrl(
  base: string,
  o: { clientId: string; challenge: string; redirectUri: string; resource?: string; scope?: string },
): string {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: o.clientId,
    redirect_uri: o.redirectUri,
    code_challenge: o.challenge,
    code_challenge_method: 'S256',
    scope: o.scope ?? 'mcp:write',
    resource: o.resource ?? `${base}/mcp`,
    state: 'xyz',
  });
  return `${base}/oauth/authorize?${q}`;
}

/** Registers a public client (RFC 7591) at the stack `base`, coming back to `redirectUri`: its client id. */
export async function registerClient(base: string, name: string, redirectUri: string): Promise<string> {
  const res = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
  });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
  return (await res.json()).client_id as string;
}

/** Exchanges a code (with its PKCE verifier) at the token endpoint of the stack `base`. */
export function exchangeCode(base: string, o: { code: string; verifier: string; clientId: string; redirectUri: string }): Promise<Response> {
  return fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: o.code,
      code_verifier: o.verifier,
      client_id: o.clientId,
      redirect_uri: o.redirectUri,
    }),
  });
}
