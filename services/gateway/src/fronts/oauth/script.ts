import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The two script files of the pages that offer passkeys (docs/oauth.md, "Passkeys"), served from
 * /oauth/static: @simplewebauthn/browser's own bundle (it defines `SimpleWebAuthnBrowser`), and
 * `passkeys.js` below. They are the only scripts the pages load (the CSP allows same-origin files
 * only: no inline script, no eval). Each page works without them: the script shows the passkey
 * part of a page only where the browser can use passkeys.
 */

let bundle: string | undefined;

/** @simplewebauthn/browser's UMD bundle, read once. */
export function webauthnBundle(): string {
  if (bundle === undefined) {
    const entry = createRequire(__filename).resolve('@simplewebauthn/browser');
    // The package's entry is script/index.js; its browser bundle is dist/bundle beside it.
    bundle = fs.readFileSync(path.join(path.dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
  }
  return bundle;
}

/**
 * The ceremony of the page's `[data-ceremony]` section (registration or authentication): its
 * options asked of `/oauth/passkeys/<ceremony>/options`, the browser's answer posted to
 * `/oauth/passkeys/<ceremony>` with the page's CSRF token, then on to where the server says.
 * Failures are said in the section's alert.
 */
export const PASSKEYS_SCRIPT = `(function () {
  'use strict';
  var lib = window.SimpleWebAuthnBrowser;
  var section = document.querySelector('[data-ceremony]');
  if (!section || !lib || !lib.browserSupportsWebAuthn()) return;
  var button = document.getElementById('passkey-button');
  var error = document.getElementById('passkey-error');
  var name = document.getElementById('passkey-name');
  var unsupported = document.getElementById('passkey-unsupported');
  var ceremony = section.dataset.ceremony;
  var csrf = section.dataset.csrf;
  var next = section.dataset.next;
  var base = '/oauth/passkeys/' + ceremony;
  section.hidden = false;
  if (unsupported) unsupported.hidden = true;

  function post(url, body) {
    body.csrf = csrf;
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (out) {
        if (!res.ok) throw new Error((out.error && out.error.message) || 'The request failed (' + res.status + ').');
        return out;
      });
    });
  }

  function fail(err) {
    error.textContent = err && err.name === 'NotAllowedError'
      ? 'No passkey was used (it was cancelled, or timed out).'
      : (err && err.message) || 'That did not work: try again.';
    error.hidden = false;
    button.disabled = false;
    button.focus();
  }

  button.addEventListener('click', function () {
    error.hidden = true;
    button.disabled = true;
    post(base + '/options', {})
      .then(function (out) {
        return ceremony === 'registration'
          ? lib.startRegistration({ optionsJSON: out.options })
          : lib.startAuthentication({ optionsJSON: out.options });
      })
      .then(function (response) {
        return post(base, { response: response, name: name ? name.value : '', next: next });
      })
      .then(function (done) {
        window.location.assign(done.next || next);
      })
      .catch(fail);
  });
})();
`;
