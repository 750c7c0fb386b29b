/**
 * Git's smart HTTP protocol, served by git itself: `git upload-pack` / `git receive-pack` in
 * `--stateless-rpc` mode over a bare repository (what `git http-backend` runs), with the request
 * body on stdin and stdout streamed to the response. Protocol v2 is git's too: the client's
 * `Git-Protocol` header becomes GIT_PROTOCOL.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

import type { Request, Response } from 'express';

import { DomainError } from '@svc/kit';

export type Service = 'git-upload-pack' | 'git-receive-pack';

/** A pkt-line (4 hex digits of length, then the payload). */
export function pkt(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}
export const FLUSH = Buffer.from('0000');

/** The client's Git-Protocol header (`version=2`, key=value pairs joined by ":"), when well formed. */
export function protocolOf(req: Request): string | undefined {
  const h = req.headers['git-protocol'];
  return typeof h === 'string' && /^[\w.=:-]{1,256}$/.test(h) ? h : undefined;
}

/** What git runs with: no system or user configuration, no prompts, the protocol the client asked for. */
function env(home: string, protocol: string | undefined): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    ...(protocol ? { GIT_PROTOCOL: protocol } : {}),
  };
}

function noGit(err: NodeJS.ErrnoException): DomainError {
  return err.code === 'ENOENT'
    ? new DomainError('unavailable', 'git_unavailable', 'Git is not installed on this server.')
    : new DomainError('internal', 'git_failed', `git could not start: ${err.message}`);
}

/** The request body, inflated when the client sent it gzip-compressed (git does, for large negotiations). */
function body(req: Request): Readable {
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc === 'gzip' || enc === 'x-gzip') return req.pipe(zlib.createGunzip());
  return req;
}

/**
 * Runs `git <service> --stateless-rpc [extra] <gitdir>` with `input` on stdin, streaming stdout to
 * `res` (after `prefix`). A client that goes away kills git; git failing midway breaks the response.
 */
function stream(
  res: Response,
  args: string[],
  opts: { home: string; protocol?: string; input?: Readable; prefix?: Buffer; contentType: string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    // A client gone before git starts (the request waited for a repository's lock or its sync):
    // nobody to answer, its 'close' has passed, and an input that would never end would keep git
    // (and the account's Git slot) waiting for good.
    if (res.destroyed) return resolve();
    const child = spawn('git', args, { env: env(opts.home, opts.protocol), stdio: ['pipe', 'pipe', 'pipe'] });
    let started = false;
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    child.on('error', (err) => {
      if (!started) reject(noGit(err));
    });
    const kill = () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    };
    res.on('close', () => {
      if (!res.writableFinished) kill();
    });
    child.on('spawn', () => {
      started = true;
      res.statusCode = 200;
      res.setHeader('Content-Type', opts.contentType);
      res.setHeader('Cache-Control', 'no-cache, max-age=0, must-revalidate');
      if (opts.prefix) res.write(opts.prefix);
      child.stdout.pipe(res, { end: false });
      if (opts.input) {
        opts.input.on('error', () => kill());
        opts.input.pipe(child.stdin);
      } else child.stdin.end();
      child.stdin.on('error', () => undefined);
    });
    child.on('close', (code) => {
      if (!started) return;
      if (code === 0) res.end();
      else res.destroy();
      if (code === 0 || res.destroyed) resolve();
      else reject(new Error(`git ${args[0]} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

/** GET info/refs?service=…: the ref advertisement (for protocol v0/v1 after the `# service=` line). */
export function advertise(req: Request, res: Response, gitdir: string, service: Service, home: string): Promise<void> {
  const protocol = protocolOf(req);
  const v2 = /(^|:)version=2(:|$)/.test(protocol ?? '');
  return stream(res, [service.slice(4), '--stateless-rpc', '--http-backend-info-refs', gitdir], {
    home,
    protocol,
    prefix: v2 ? undefined : Buffer.concat([pkt(`# service=${service}\n`), FLUSH]),
    contentType: `application/x-${service}-advertisement`,
  });
}

/** POST git-upload-pack: the negotiation and the pack, streamed as git writes it. */
export function uploadPack(req: Request, res: Response, gitdir: string, home: string): Promise<void> {
  return stream(res, ['upload-pack', '--stateless-rpc', gitdir], {
    home,
    protocol: protocolOf(req),
    input: body(req),
    contentType: 'application/x-git-upload-pack-result',
  });
}

/**
 * POST git-receive-pack, with git's whole answer kept (it is small: the report of each ref, and
 * progress) so that the caller can act on the result before the client hears it. `aborted`: the
 * client went away before git was done (nothing is to be acted on then).
 */
export function receivePack(
  req: Request,
  gitdir: string,
  home: string,
): Promise<{ code: number | null; out: Buffer; stderr: string; aborted: boolean }> {
  return new Promise((resolve, reject) => {
    // A client gone before git starts (the push waited for the site's lock or its sync): its body
    // can no longer be read and its 'close' has passed, so nothing would end git's input; git would
    // wait for good, holding the site's lock and the account's Git slot.
    if (req.destroyed && !req.readableEnded) return resolve({ code: null, out: Buffer.alloc(0), stderr: '', aborted: true });
    const child = spawn('git', ['receive-pack', '--stateless-rpc', gitdir], { env: env(home, protocolOf(req)), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let aborted = false;
    child.stdout.on('data', (d: Buffer) => {
      size += d.length;
      if (size <= 1 << 20) out.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    child.on('error', (err) => reject(noGit(err)));
    const input = body(req);
    input.on('error', () => {
      aborted = true;
      child.kill('SIGKILL');
    });
    // Gone before its whole body reached git (not only before it was sent: a body received but not
    // yet read is dropped with the request), git's input would never end.
    req.on('close', () => {
      if (!req.readableEnded) {
        aborted = true;
        child.kill('SIGKILL');
      }
    });
    child.stdin.on('error', () => undefined);
    input.pipe(child.stdin);
    child.on('close', (code) => resolve({ code, out: Buffer.concat(out), stderr, aborted }));
  });
}
