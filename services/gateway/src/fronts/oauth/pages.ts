/**
 * The pages of sign-in, consent, connected apps and passkeys (docs/oauth.md): plain HTML rendered
 * on the server, one style sheet (`/oauth/static/oauth.css`), every field labelled, readable on a
 * phone. Every value shown is escaped. No inline script anywhere: the sign-in and passkeys pages
 * load two same-origin script files (the WebAuthn browser library and `passkeys.js`), which only
 * add passkeys to pages that work without them (the API-key sign-in is a plain form).
 */

export const esc = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The pages' icon (so that browsers do not ask for /favicon.ico). */
export const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b57d0"/></svg>`;

export const STYLE = `
:root { color-scheme: light; --ink: #111; --muted: #444; --line: #767676; --accent: #0b57d0; --bad: #a50e0e; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #fff; }
main { max-width: 36rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
p, li, dd { color: var(--ink); }
.muted { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0 0 1rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input[type=password], input[type=text] { width: 100%; padding: .6rem; font: inherit; border: 1px solid var(--line); border-radius: 4px; }
fieldset { border: 1px solid var(--line); border-radius: 4px; margin: 1rem 0; padding: .5rem 1rem 1rem; }
fieldset label { display: flex; gap: .5rem; align-items: flex-start; font-weight: 400; margin: .5rem 0 0; }
button { font: inherit; padding: .6rem 1.2rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; min-height: 44px; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
:focus-visible { outline: 3px solid #e37400; outline-offset: 2px; }
.actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1.5rem; }
.error { color: var(--bad); font-weight: 600; }
ul.apps { list-style: none; padding: 0; }
ul.apps > li { border: 1px solid var(--line); border-radius: 4px; padding: 1rem; margin: 0 0 1rem; }
ul.apps h2 { margin-top: 0; }
.passkey { border: 1px solid var(--line); border-radius: 4px; padding: .5rem 1rem 1rem; margin: 1rem 0; }
.or { text-align: center; color: var(--muted); margin: 1rem 0 0; }
nav { display: flex; flex-wrap: wrap; gap: 1rem; margin: 1.5rem 0 0; }
a { color: var(--accent); }
[hidden] { display: none !important; }
code { font-family: ui-monospace, monospace; font-size: .95em; overflow-wrap: anywhere; }
`;

/** The scripts of a page that offers passkeys (same-origin files: the CSP allows no other). */
const SCRIPTS = `<script src="/oauth/static/webauthn.js" defer></script>
<script src="/oauth/static/passkeys.js" defer></script>`;

function layout(title: string, body: string, scripts = false): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${esc(title)} · svc</title>
<link rel="stylesheet" href="/oauth/static/oauth.css">
<link rel="icon" href="/oauth/static/icon.svg" type="image/svg+xml">
${scripts ? SCRIPTS : ''}
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;

/** Where a passkey ceremony's script posts, with its CSRF token, and where it goes once done. */
export interface PasskeySignIn {
  csrf: string;
  /** Where the browser goes once signed in (the interaction, or a page of the person's). */
  next: string;
}

const data = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => ` data-${k}="${esc(v)}"`)
    .join('');

/**
 * Sign-in: with a passkey (offered by the script where the browser has WebAuthn; hidden
 * otherwise) or with an API key (a plain form, no script needed): for an authorization in
 * progress (`action` its login URL), or for the connected apps and passkeys pages.
 */
export function signInPage(o: {
  action: string;
  csrf: string;
  passkey: PasskeySignIn;
  clientName?: string;
  error?: string;
  returnTo?: string;
}): string {
  return layout(
    'Sign in',
    `<h1>Sign in to svc</h1>
${o.clientName ? `<p><strong>${esc(o.clientName)}</strong> asks to connect to your svc account. Sign in first; you will then see what it asks for.</p>` : '<p>Sign in to see your connected apps and passkeys.</p>'}
${o.error ? `<p class="error" role="alert" id="signin-error">${esc(o.error)}</p>` : ''}
<section class="passkey" id="passkey-signin" hidden${data({ ceremony: 'authentication', csrf: o.passkey.csrf, next: o.passkey.next })}>
<h2>With a passkey</h2>
<p class="muted">Your device asks you to confirm it is you (fingerprint, face or screen lock).</p>
<p class="error" role="alert" id="passkey-error" hidden></p>
<div class="actions"><button type="button" id="passkey-button">Sign in with a passkey</button></div>
<p class="or">or</p>
</section>
<form method="post" action="${esc(o.action)}">
${hidden('csrf', o.csrf)}${o.returnTo ? hidden('return', o.returnTo) : ''}
<label for="api-key">Your API key</label>
<input id="api-key" name="api_key" type="password" autocomplete="current-password" required spellcheck="false"${o.error ? ' aria-describedby="signin-error" aria-invalid="true"' : ''} autofocus>
<p class="muted">A key of yours (svc_…), not limited to a project. It is used to sign you in only: it is not given to the app.</p>
<div class="actions"><button type="submit">Sign in</button></div>
</form>`,
    true,
  );
}

/** One passkey as its page lists it. */
export interface PasskeyView {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  /** Synced to the person's other devices (a multi-device credential, backed up). */
  synced: boolean;
}

const when = (iso: string | null, none: string) => (iso ? `<time datetime="${esc(iso)}">${esc(iso)}</time>` : none);

/** A person's passkeys: each with a Remove button (a plain form), and the adding of one (by the script). */
export function passkeysPage(o: {
  csrf: string;
  signOutCsrf: string;
  person: { id: string; name: string };
  passkeys: PasskeyView[];
  notice?: string;
}): string {
  const items = o.passkeys
    .map(
      (k) => `<li>
<h2>${esc(k.name)}</h2>
<dl>
<dt>Added</dt><dd>${when(k.createdAt, '')}</dd>
<dt>Last use</dt><dd>${when(k.lastUsedAt, 'never')}</dd>
<dt>Synced</dt><dd>${k.synced ? 'yes: on your other devices too' : 'no: on this device or key only'}</dd>
</dl>
<form method="post" action="/oauth/passkeys/delete">
${hidden('csrf', o.csrf)}${hidden('passkey', k.id)}
<button type="submit" class="danger" aria-label="Remove passkey ${esc(k.name)}">Remove</button>
</form>
</li>`,
    )
    .join('\n');
  return layout(
    'Passkeys',
    `<h1>Passkeys</h1>
<p>Signed in as ${esc(o.person.name)} (<code>${esc(o.person.id)}</code>). A passkey signs you in to these pages without your API key.</p>
${o.notice ? `<p role="status">${esc(o.notice)}</p>` : ''}
${o.passkeys.length ? `<ul class="apps">${items}</ul>` : '<p>You have no passkey yet.</p>'}
<section class="passkey" id="passkey-add" hidden${data({ ceremony: 'registration', csrf: o.csrf, next: '/oauth/passkeys' })}>
<h2>Add a passkey</h2>
<label for="passkey-name">Its name</label>
<input id="passkey-name" type="text" maxlength="100" autocomplete="off" aria-describedby="passkey-name-help">
<p class="muted" id="passkey-name-help">To tell your passkeys apart, such as “Work laptop”. Your device then asks you to confirm it is you.</p>
<p class="error" role="alert" id="passkey-error" hidden></p>
<div class="actions"><button type="button" id="passkey-button">Add a passkey</button></div>
</section>
<p class="muted" id="passkey-unsupported">Adding a passkey needs a browser with JavaScript and passkeys (WebAuthn).</p>
<nav><a href="/oauth/apps">Connected apps</a></nav>
<form method="post" action="/oauth/signout">${hidden('csrf', o.signOutCsrf)}<div class="actions"><button type="submit" class="secondary">Sign out</button></div></form>`,
    true,
  );
}

export interface ConsentView {
  action: string;
  csrf: string;
  client: { id: string; name: string; uri?: string; verified: string };
  redirectUri: string;
  resources: Array<{ id: string; name: string; scopes: Array<{ scope: string; text: string }> }>;
  principal: { id: string; name: string };
  /** The person's own agents: the tokens may act as one of them instead (the person chooses). */
  agents: Array<{ id: string; name: string }>;
  /** Where the token acts: `the MCP channel`, `the API`. */
  channel: string;
  canNarrow: boolean;
}

export function consentPage(v: ConsentView): string {
  const resources = v.resources
    .map(
      (r) => `<h2>${esc(r.name)}</h2>
<p class="muted"><code>${esc(r.id)}</code></p>
<ul>${r.scopes.map((s) => `<li><strong><code>${esc(s.scope)}</code></strong>: ${esc(s.text)}</li>`).join('')}</ul>`,
    )
    .join('\n');
  return layout(
    'Allow access',
    `<h1>Allow ${esc(v.client.name)} to use your svc account?</h1>
<dl>
<dt>App</dt><dd>${esc(v.client.name)}${v.client.uri ? ` (<code>${esc(v.client.uri)}</code>)` : ''}</dd>
<dt>Client id</dt><dd><code>${esc(v.client.id)}</code></dd>
<dt>Known by</dt><dd>${esc(v.client.verified)}</dd>
<dt>Returns to</dt><dd><code>${esc(v.redirectUri)}</code></dd>
<dt>Acting as</dt><dd>${v.agents.length ? 'You or one of your agents (choose below)' : `${esc(v.principal.name)} (<code>${esc(v.principal.id)}</code>)`}, on ${esc(v.channel)}: it can never change who may do what (members, grants, keys)</dd>
</dl>
${resources}
<form method="post" action="${esc(v.action)}">
${hidden('csrf', v.csrf)}
${
  v.canNarrow
    ? `<fieldset><legend>Access</legend>
<label><input type="radio" name="access" value="write" checked> Read and write, as asked</label>
<label><input type="radio" name="access" value="read"> Read only: nothing can be changed</label>
</fieldset>`
    : hidden('access', 'write')
}
${
  v.agents.length
    ? `<fieldset><legend>Act as</legend>
<label><input type="radio" name="subject" value="person" checked> You: ${esc(v.principal.name)} (<code>${esc(v.principal.id)}</code>)</label>
${v.agents.map((a) => `<label><input type="radio" name="subject" value="${esc(a.id)}"> Your agent ${esc(a.name)} (<code>${esc(a.id)}</code>): only its tools, under its limits</label>`).join('\n')}
</fieldset>`
    : hidden('subject', 'person')
}
<div class="actions">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>
<p class="muted">You can revoke it at any time on <a href="/oauth/apps">connected apps</a>.</p>`,
  );
}

export interface AppView {
  grantId: string;
  clientName: string;
  clientId: string;
  resources: Array<{ id: string; scopes: string }>;
  /** The agent its tokens act as; null: the person. */
  actsAs: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export function appsPage(o: { csrf: string; person: { id: string; name: string }; apps: AppView[]; notice?: string }): string {
  const items = o.apps
    .map(
      (a) => `<li>
<h2>${esc(a.clientName)}</h2>
<dl>
<dt>Client id</dt><dd><code>${esc(a.clientId)}</code></dd>
${a.resources.map((r) => `<dt>Access</dt><dd><code>${esc(r.id)}</code>: ${esc(r.scopes || 'nothing')}</dd>`).join('')}
<dt>Acts as</dt><dd>${a.actsAs ? `your agent <code>${esc(a.actsAs)}</code>` : 'you'}</dd>
<dt>Connected</dt><dd><time datetime="${esc(a.createdAt)}">${esc(a.createdAt)}</time></dd>
<dt>Last use</dt><dd>${a.lastUsedAt ? `<time datetime="${esc(a.lastUsedAt)}">${esc(a.lastUsedAt)}</time>` : 'never'}</dd>
</dl>
<form method="post" action="/oauth/apps/revoke">
${hidden('csrf', o.csrf)}${hidden('grant', a.grantId)}
<button type="submit" class="danger" aria-label="Revoke ${esc(a.clientName)}">Revoke</button>
</form>
</li>`,
    )
    .join('\n');
  return layout(
    'Connected apps',
    `<h1>Connected apps</h1>
<p>Signed in as ${esc(o.person.name)} (<code>${esc(o.person.id)}</code>).</p>
${o.notice ? `<p role="status">${esc(o.notice)}</p>` : ''}
${o.apps.length ? `<ul class="apps">${items}</ul>` : '<p>No app is connected to your account.</p>'}
<nav><a href="/oauth/passkeys">Passkeys</a></nav>
<form method="post" action="/oauth/signout">${hidden('csrf', o.csrf)}<div class="actions"><button type="submit" class="secondary">Sign out</button></div></form>`,
  );
}

export function messagePage(title: string, text: string): string {
  return layout(title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>`);
}
