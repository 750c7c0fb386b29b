import { createHash } from 'node:crypto';
import http from 'node:http';

import { createSystemTokenSource, type EventEnvelope, generateApiKey, hashSecret, keyPrefix, PrincipalSigner } from '@svc/kit';
import { drive, keys } from '@svc/proto';

import { startTestStack, type TestStack } from './stack';

// The drive's test stack and helpers, shared by the drive suites: embedded backends (or the real
// ones CI names), with the size limit lowered so that 413 is cheap to reach (the service reads
// SVC_DRIVE_* from its env).
export const LIMIT = 4 * 1024 * 1024;
export let t: TestStack;
export let accountId: string;
/** Every drive event published while the suite runs. */
export const events: Array<{ subject: string; event: EventEnvelope }> = [];

/** Starts the suite's stack before its tests and stops it after. */
export function useDriveStack(): void {
  beforeAll(async () => {
    process.env.SVC_DRIVE_MAX_FILE_BYTES = String(LIMIT);
    try {
      t = await startTestStack();
    } finally {
      delete process.env.SVC_DRIVE_MAX_FILE_BYTES;
    }
    accountId = (await t.call('GET', '/me', { key: t.bootstrapKey })).body.accountId;
    const bus = await t.stack.backends.bus();
    await bus.subscribe('drive.>', async (event, meta) => void events.push({ subject: meta.subject, event }));
  }, 60_000);
  afterAll(() => t?.stop());
}

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
export const quoted = (b: Buffer | string) => `"${sha(b)}"`;

export interface Reply {
  status: number;
  headers: Headers;
  bytes: Buffer;
  body: any;
}

/** Any request, bytes in and out. */
export async function req(
  method: string,
  p: string,
  opts: { key?: string; body?: Buffer | string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  headers.authorization ??= `Bearer ${opts.key ?? t.bootstrapKey}`;
  const res = await fetch(t.url + p, { method, headers, body: opts.body });
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: any = null;
  try {
    body = bytes.length ? JSON.parse(bytes.toString('utf8')) : null;
  } catch {
    body = bytes.toString('utf8');
  }
  return { status: res.status, headers: res.headers, bytes, body };
}

export async function uploadFile(
  name: string,
  content: Buffer | string,
  opts: { parentId?: string; key?: string; headers?: Record<string, string> } = {},
) {
  const q = new URLSearchParams({ name, ...(opts.parentId ? { parentId: opts.parentId } : {}) });
  return req('POST', `/drive/upload?${q}`, {
    key: opts.key,
    body: content,
    headers: { 'content-type': 'application/octet-stream', ...opts.headers },
  });
}

export async function folder(name: string, parentId?: string, key?: string) {
  const res = await t.call('POST', '/drive/folders', { key: key ?? t.bootstrapKey, body: { name, ...(parentId ? { parentId } : {}) } });
  expect(res.status).toBe(201);
  return res.body as { id: string; etag: string };
}

/** A key of another account (or of an agent), registered the way the bootstrap key is. */
export async function importKey(owner: { accountId: string; ownerKind: 'human' | 'agent'; ownerId: string }): Promise<string> {
  const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
  const client = t.stack.registry.client('keys', keys.KeysServiceService, 'svc.keys.v1.KeysService');
  const plaintext = generateApiKey();
  await client.importKey({ keyHash: hashSecret(plaintext), prefix: keyPrefix(plaintext), name: 'test', ...owner }, { principalToken: token });
  return plaintext;
}

export async function collectGarbage(graceSeconds = 0) {
  const token = await createSystemTokenSource(new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!))();
  const client = t.stack.registry.client('drive', drive.DriveServiceService as any, 'svc.drive.v1.DriveService') as any;
  return client.collectGarbage({ graceSeconds }, { principalToken: token });
}

export async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

/** Sends part of a body with a larger Content-Length, then drops the connection. */
export function abortedUpload(p: string, headers: Record<string, string>, sent: Buffer, declared: number): Promise<void> {
  return new Promise((resolve) => {
    const r = http.request(t.url + p, {
      method: p.includes('/content') ? 'PUT' : 'POST',
      headers: { ...headers, 'content-length': String(declared) },
    });
    r.on('error', () => resolve());
    r.on('response', () => resolve());
    r.write(sent, () =>
      setTimeout(() => {
        r.destroy();
        resolve();
      }, 150),
    );
  });
}
