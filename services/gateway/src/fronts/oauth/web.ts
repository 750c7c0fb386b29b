import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

import type { Request, Response } from 'express';

/**
 * What the pages need of the web (docs/oauth.md, "Pages"): cookies (HttpOnly, SameSite=Lax,
 * Secure except on loopback), a CSRF token on every form, a signed sign-in cookie, and the headers
 * of every page (a CSP without any script, or with same-origin script files only on the pages that
 * offer passkeys; framing refused, nothing cached).
 */

const CSRF_COOKIE = 'svc_csrf';
const SESSION_COOKIE = 'svc_web';
/** How long the pages' own sign-in lasts. */
const SESSION_SECONDS = 30 * 60;

/** Loopback hosts: localhost and the names below it (RFC 6761), 127/8, ::1. */
const LOOPBACK = /^((?:[a-z0-9-]+\.)*localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/i;

const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'";
/** The pages that offer passkeys: their two script files, and their calls to this origin; no inline script, no eval. */
const CSP_WITH_SCRIPTS = `${CSP}; script-src 'self'; connect-src 'self'`;

export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer a browser posts forms with `Origin: null`.
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export class WebSecurity {
  private readonly key: Buffer;

  constructor(
    secret: string,
    /** The server's own origin: a form posted from any other is refused. */
    private readonly origin: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'svc.gateway.oauth', 'pages/v1', 32));
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }

  /** Secure unless the page is served on a loopback host over plain HTTP. */
  private secure(req: Request): boolean {
    return req.secure || !LOOPBACK.test(req.headers.host ?? '');
  }

  private setCookie(req: Request, res: Response, name: string, value: string, maxAge?: number): void {
    const parts = [`${name}=${value}`, 'Path=/oauth', 'HttpOnly', 'SameSite=Lax'];
    if (this.secure(req)) parts.push('Secure');
    if (maxAge !== undefined) parts.push(`Max-Age=${maxAge}`);
    res.append('Set-Cookie', parts.join('; '));
  }

  cookie(req: Request, name: string): string | undefined {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
    }
    return undefined;
  }

  /** The CSRF token of a form for `purpose`, bound to this browser's CSRF cookie (set when missing). */
  csrfToken(req: Request, res: Response, purpose: string): string {
    let seed = this.cookie(req, CSRF_COOKIE);
    if (!seed || !/^[A-Za-z0-9_-]{32,64}$/.test(seed)) {
      seed = randomBytes(24).toString('base64url');
      this.setCookie(req, res, CSRF_COOKIE, seed);
      (req.headers as Record<string, string>).cookie = `${req.headers.cookie ? req.headers.cookie + '; ' : ''}${CSRF_COOKIE}=${seed}`;
    }
    return this.mac(`csrf|${seed}|${purpose}`);
  }

  /**
   * What ties a passkey ceremony to this browser: a MAC of its CSRF cookie (set when missing). The
   * accounts service keeps it with the challenge and takes the challenge back only with it.
   */
  binding(req: Request, res: Response): string {
    this.csrfToken(req, res, 'binding');
    return this.mac(`binding|${this.cookie(req, CSRF_COOKIE)}`);
  }

  /**
   * Whether a form post is this server's own: posted from its origin (or a browser that says
   * nothing of it), with the token of its form for this browser.
   */
  checkForm(req: Request, purpose: string): string | null {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== this.origin) return 'This form was posted from another site.';
    if (req.headers['sec-fetch-site'] === 'cross-site') return 'This form was posted from another site.';
    const seed = this.cookie(req, CSRF_COOKIE);
    const given = typeof req.body?.csrf === 'string' ? req.body.csrf : '';
    if (!seed || !given) return 'The form has expired or was not sent by this page. Load the page again.';
    const want = Buffer.from(this.mac(`csrf|${seed}|${purpose}`));
    const got = Buffer.from(given);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return 'The form has expired or was not sent by this page. Load the page again.';
    return null;
  }

  /** Signs the person in to the pages (connected apps, the next authorizations). */
  signIn(req: Request, res: Response, userId: string): void {
    const body = Buffer.from(JSON.stringify({ u: userId, e: Math.floor(Date.now() / 1000) + SESSION_SECONDS })).toString('base64url');
    this.setCookie(req, res, SESSION_COOKIE, `${body}.${this.mac(`session|${body}`)}`, SESSION_SECONDS);
  }

  signOut(req: Request, res: Response): void {
    this.setCookie(req, res, SESSION_COOKIE, '', 0);
  }

  /** The person signed in to the pages, if any. */
  person(req: Request): string | null {
    const v = this.cookie(req, SESSION_COOKIE);
    const dot = v?.indexOf('.') ?? -1;
    if (!v || dot < 0) return null;
    const body = v.slice(0, dot);
    const want = Buffer.from(this.mac(`session|${body}`));
    const got = Buffer.from(v.slice(dot + 1));
    if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
    try {
      const s = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { u?: unknown; e?: unknown };
      return typeof s.u === 'string' && typeof s.e === 'number' && s.e > Date.now() / 1000 ? s.u : null;
    } catch {
      return null;
    }
  }
}

/** Sends a page; one that loads the pages' script files (pages.ts) is the only kind allowed to run them. */
export function sendPage(res: Response, status: number, html: string): void {
  res.statusCode = status;
  for (const [k, v] of Object.entries(PAGE_HEADERS)) res.setHeader(k, v);
  if (html.includes('<script src="/oauth/static/')) res.setHeader('Content-Security-Policy', CSP_WITH_SCRIPTS);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(html);
}

/** A JSON answer of the pages' own calls (the passkey ceremonies): never cached, never framed. */
export function sendJson(res: Response, status: number, body: unknown): void {
  res.statusCode = status;
  for (const [k, v] of Object.entries(PAGE_HEADERS)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}
