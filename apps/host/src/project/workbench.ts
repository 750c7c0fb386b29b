import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { ControlError } from '../units/units.js';
import type { Project } from './project.js';

export interface Pane {
  id: string;
  kind: 'file' | 'world' | 'thread';
  title: string;
  /** The project path, world id or thread id it shows. */
  target: string;
  openedAt: string;
  /** A thread's events as last read (files and worlds are read when the view asks). */
  snapshot?: unknown;
}

const MAX_PANES = 20;
const digest = (s: string) => createHash('sha256').update(s).digest();

const PAGE = (token: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc host workbench</title>
<meta name="referrer" content="no-referrer">
<style>body{font:14px system-ui,sans-serif;margin:0;display:flex;height:100vh}nav{width:16rem;border-right:1px solid #ccc;overflow:auto}
nav button{display:block;width:100%;text-align:left;padding:.5rem;border:0;background:none;cursor:pointer}nav button.on{background:#eef}
main{flex:1;overflow:auto;padding:1rem}pre{white-space:pre-wrap}</style></head>
<body><nav id="panes"></nav><main><h1 id="title">Workbench</h1><p>Panes opened by the host's tools (open_file, show_world, thread_read) show here. This view only shows.</p><pre id="body"></pre></main>
<script src="/app.js?t=${encodeURIComponent(token)}"></script></body></html>
`;

/** The page's script: lists panes, shows the chosen one (as text only: nothing is ever rendered as HTML). */
const APP = `(() => {
  const t = new URLSearchParams(location.search).get('t') || new URL(document.currentScript.src).searchParams.get('t');
  const q = '?t=' + encodeURIComponent(t);
  let current = null;
  async function panes() {
    const r = await fetch('/panes' + q, { cache: 'no-store' });
    const { panes } = await r.json();
    const nav = document.getElementById('panes');
    nav.replaceChildren(...panes.map((p) => {
      const b = document.createElement('button');
      b.textContent = p.kind + ': ' + p.title;
      if (p.id === current) b.className = 'on';
      b.onclick = () => { current = p.id; show(); panes(); };
      return b;
    }));
    if (!current && panes.length) { current = panes[panes.length - 1].id; show(); }
  }
  async function show() {
    const r = await fetch('/panes/' + encodeURIComponent(current) + q, { cache: 'no-store' });
    const p = await r.json();
    document.getElementById('title').textContent = p.title || p.error?.message || '';
    document.getElementById('body').textContent = typeof p.content === 'string' ? p.content : JSON.stringify(p.content, null, 2);
  }
  panes(); setInterval(() => { panes(); if (current) show(); }, 2000);
})();
`;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The workbench: a view of panes (project files, worlds, threads) that the tools open, served on
 * its own loopback listener (127.0.0.1, any free port) at a URL carrying a token made at each
 * launch. The view only shows: it answers GET and nothing else, never calls a tool, never sees
 * the host credential, and its token opens nothing on the control endpoint.
 */
export class Workbench {
  private readonly panes: Pane[] = [];
  private server: http.Server | undefined;
  private starting: Promise<void> | undefined;
  private port = 0;
  private readonly token = randomBytes(24).toString('base64url');
  private nextId = 1;

  constructor(private readonly project: Project | undefined) {}

  /** The view's URL, token included (for callers on this machine only). */
  async url(): Promise<string> {
    await this.start();
    return `http://127.0.0.1:${this.port}/?t=${this.token}`;
  }

  list(): Pane[] {
    return this.panes.map(({ snapshot: _s, ...p }) => p);
  }

  open(p: Omit<Pane, 'id' | 'openedAt'>): Pane {
    const existing = this.panes.findIndex((x) => x.kind === p.kind && x.target === p.target);
    if (existing >= 0) this.panes.splice(existing, 1);
    const pane: Pane = { ...p, id: `pane_${this.nextId++}`, openedAt: new Date().toISOString() };
    this.panes.push(pane);
    if (this.panes.length > MAX_PANES) this.panes.shift();
    return pane;
  }

  private start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve, reject) => {
      const server = http.createServer((req, res) => {
        this.serve(req, res).catch(() => send(res, 500, { error: { code: 'internal_error', message: 'The view failed.' } }));
      });
      server.headersTimeout = 10_000;
      server.requestTimeout = 30_000;
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: 0 }, () => {
        this.port = (server.address() as AddressInfo).port;
        this.server = server;
        server.unref();
        resolve();
      });
    });
    return this.starting;
  }

  /** Why a request to the view is refused, or undefined. */
  private refusal(req: http.IncomingMessage, url: URL): [number, string, string] | undefined {
    const hostRe = new RegExp(`^(?:127\\.0\\.0\\.1|localhost|\\[::1\\]):${this.port}$`, 'i');
    if (!hostRe.test(req.headers.host ?? '')) return [403, 'host_refused', 'The Host header must be this view’s own loopback address.'];
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://127.0.0.1:${this.port}` && origin !== `http://localhost:${this.port}`) {
      return [403, 'origin_refused', 'Only the view’s own page may call it.'];
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return [405, 'method_not_allowed', 'The workbench only shows: GET only.'];
    const given = url.searchParams.get('t') ?? '';
    if (!timingSafeEqual(digest(given), digest(this.token)))
      return [401, 'unauthenticated', 'The workbench URL carries its token (?t=…); ask list_panes for it.'];
    return undefined;
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://view');
    const refused = this.refusal(req, url);
    if (refused) {
      if (refused[0] === 405) res.setHeader('allow', 'GET, HEAD');
      return send(res, refused[0], { error: { code: refused[1], message: refused[2] } });
    }
    if (url.pathname === '/') return sendText(res, 'text/html; charset=utf-8', PAGE(this.token));
    if (url.pathname === '/app.js') return sendText(res, 'text/javascript; charset=utf-8', APP);
    if (url.pathname === '/panes') return send(res, 200, { panes: this.list() });
    const m = /^\/panes\/(pane_\d+)$/.exec(url.pathname);
    const pane = m && this.panes.find((p) => p.id === m[1]);
    if (!pane) return send(res, 404, { error: { code: 'not_found', message: 'No such pane.' } });
    return send(res, 200, { ...pane, content: await this.content(pane) });
  }

  /** What a pane shows now: a file's text, a world's document, a thread's events as last read. */
  private async content(p: Pane): Promise<unknown> {
    try {
      if (p.kind === 'file') return (await this.project!.readFile(p.target)).content;
      if (p.kind === 'world') {
        const w = await this.project!.world(p.target);
        return { version: w.version, world: w.world };
      }
      return p.snapshot;
    } catch (err) {
      return { error: err instanceof ControlError ? { code: err.code, message: err.message } : { code: 'failed', message: 'Cannot show it.' } };
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    await new Promise<void>((r) => {
      s.close(() => r());
      s.closeAllConnections();
    });
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendText(res: http.ServerResponse, type: string, text: string): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
