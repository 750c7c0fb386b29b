import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { tempDir } from '../support/backends';
import { exitCode, freePort, spawnSvc, waitFor } from '../support/process';

// The platform as its own process (the image's entrypoint, embedded backends), so that its memory
// can be measured and the process killed in the middle of an upload.
const MiB = 1024 * 1024;
const dataDir = tempDir('svc-drive-proc-');
let child: ReturnType<typeof spawnSvc>;
let port: number;
let key: string;

async function start(): Promise<void> {
  port = await freePort();
  child = spawnSvc({ SVC_SERVICE: 'all', PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: dataDir });
  await waitFor(async () => ((await fetch(`http://127.0.0.1:${port}/ready`)).ok ? true : undefined), 60_000, 'the stack').catch((err) => {
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  });
  key = fs.readFileSync(path.join(dataDir, 'bootstrap-key'), 'utf8').trim();
}

beforeAll(start, 90_000);
afterAll(async () => {
  if (child.exitCode === null) {
    child.kill('SIGTERM');
    await exitCode(child);
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Resident memory of the stack process, in bytes. */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

function sampler(pid: number) {
  let peak = rss(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rss(pid));
    } catch {
      // the process is gone
    }
  }, 20);
  return { stop: () => (clearInterval(timer), peak) };
}

/**
 * Streams `total` bytes (one random MiB repeated) as a request body, with backpressure; resolves
 * with the answer, or, with `killAfter`, calls it once that many bytes are out and resolves then.
 */
function streamUpload(
  method: string,
  p: string,
  total: number,
  block: Buffer,
  opts: { headers?: Record<string, string>; killAfter?: { bytes: number; then: () => void } } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: p,
      method,
      headers: { authorization: `Bearer ${key}`, 'content-length': String(total), ...opts.headers },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', (err) => (opts.killAfter ? resolve({ status: 0, body: null }) : reject(err)));
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        if (opts.killAfter && sent >= opts.killAfter.bytes) {
          opts.killAfter.then();
          return;
        }
        const n = Math.min(block.length, total - sent);
        sent += n;
        if (!req.write(n === block.length ? block : block.subarray(0, n))) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

function hashOf(block: Buffer, total: number): string {
  const h = createHash('sha256');
  for (let sent = 0; sent < total; sent += block.length) h.update(block.subarray(0, Math.min(block.length, total - sent)));
  return h.digest('hex');
}

/** Downloads and hashes a file without keeping it. */
function hashDownload(id: string): Promise<{ status: number; etag: string; sha256: string; size: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: `/drive/${id}/content`, headers: { authorization: `Bearer ${key}` } }, (res) => {
        const h = createHash('sha256');
        let size = 0;
        res.on('data', (d: Buffer) => {
          size += d.length;
          h.update(d);
        });
        res.on('end', () => resolve({ status: res.statusCode!, etag: String(res.headers.etag), sha256: h.digest('hex'), size }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

let fileId: string;
let fileSha: string;

test('a 256 MiB upload and its download run in bounded memory', async () => {
  const block = randomBytes(MiB);
  const total = 256 * MiB;
  // Warm up (first requests load code and caches), then measure from a settled baseline.
  await streamUpload('POST', '/drive/upload?name=warm.bin', 8 * MiB, block);
  await new Promise((r) => setTimeout(r, 300));
  const base = rss(child.pid!);
  const up = sampler(child.pid!);
  const res = await streamUpload('POST', '/drive/upload?name=big.bin', total, block);
  const upPeak = up.stop();
  expect(res.status).toBe(201);
  fileSha = hashOf(block, total);
  expect(res.body).toMatchObject({ size: total, sha256: fileSha, etag: `"${fileSha}"` });
  fileId = res.body.id;

  const down = sampler(child.pid!);
  const got = await hashDownload(fileId);
  const downPeak = down.stop();
  expect(got).toEqual({ status: 200, etag: `"${fileSha}"`, sha256: fileSha, size: total });
  // Far below the file's size: the content is streamed, never held whole.
  expect(upPeak - base).toBeLessThan(96 * MiB);
  expect(downPeak - base).toBeLessThan(96 * MiB);
  process.stdout.write(
    `drive memory: baseline ${(base / MiB).toFixed(0)} MiB, upload peak +${((upPeak - base) / MiB).toFixed(0)} MiB, download peak +${((downPeak - base) / MiB).toFixed(0)} MiB\n`,
  );
}, 120_000);

test('a process killed mid-upload leaves the previous version intact, and its hash matches', async () => {
  const block = randomBytes(MiB);
  const killed = streamUpload('PUT', `/drive/${fileId}/content`, 64 * MiB, block, {
    headers: { 'if-match': `"${fileSha}"` },
    killAfter: { bytes: 24 * MiB, then: () => child.kill('SIGKILL') },
  });
  await killed;
  await exitCode(child, 10_000);
  await start();
  const got = await hashDownload(fileId);
  expect(got).toEqual({ status: 200, etag: `"${fileSha}"`, sha256: fileSha, size: 256 * MiB });
  // Every blob on disk hashes to its own name (none is truncated).
  const root = path.join(dataDir, 'blobs', 'drive');
  for (const account of fs.readdirSync(root)) {
    for (const dir of fs.readdirSync(path.join(root, account))) {
      for (const f of fs.readdirSync(path.join(root, account, dir))) {
        const h = createHash('sha256');
        await new Promise<void>((resolve, reject) =>
          fs
            .createReadStream(path.join(root, account, dir, f))
            .on('data', (d) => h.update(d))
            .on('end', resolve)
            .on('error', reject),
        );
        expect(h.digest('hex')).toBe(f);
      }
    }
  }
  // And the file can be written again after the restart.
  const res = await streamUpload('PUT', `/drive/${fileId}/content`, 3 * MiB, block, { headers: { 'if-match': `"${fileSha}"` } });
  expect(res.status).toBe(200);
  expect(res.body.sha256).toBe(hashOf(block, 3 * MiB));
}, 120_000);
