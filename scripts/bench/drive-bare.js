#!/usr/bin/env node
// The bare server the drive benchmark (scripts/bench/drive.js) measures the gateway against, in
// the same run: plain node:http doing what a drive upload and download must do at the least, and
// nothing else (no authentication, no metadata, no database, no second process).
//
//   POST /upload      the body streamed to a temporary file while hashed (SHA-256, on the event
//                     loop), then fsync, rename to the digest's name, fsync of the folder: the
//                     same durability as the blob store's; answers 201 {sha256, size}.
//   GET /blob/<hex>   the file read and sent with its Content-Length.
//   DELETE /blob/<hex>
//
// Usage: node scripts/bench/drive-bare.js <folder> — prints `port <n>` once listening.
'use strict';
const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { pipeline } = require('node:stream/promises');

const dir = process.argv[2];
if (!dir) throw new Error('usage: drive-bare.js <folder>');
fs.mkdirSync(dir, { recursive: true });

async function syncFolder() {
  const fh = await fs.promises.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function upload(req, res) {
  const tmp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
  const fh = await fs.promises.open(tmp, 'w');
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of req) {
      hash.update(chunk);
      size += chunk.length;
      let off = 0;
      while (off < chunk.length) off += (await fh.write(chunk, off)).bytesWritten;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  const sha256 = hash.digest('hex');
  await fs.promises.rename(tmp, path.join(dir, sha256));
  await syncFolder();
  const body = JSON.stringify({ sha256, size });
  res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function download(res, file) {
  const st = await fs.promises.stat(file);
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size });
  await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), res);
}

const server = http.createServer((req, res) => {
  const blob = /^\/blob\/([0-9a-f]{64})$/.exec(req.url ?? '');
  const work =
    req.method === 'POST' && req.url === '/upload'
      ? upload(req, res)
      : blob && req.method === 'GET'
        ? download(res, path.join(dir, blob[1]))
        : blob && req.method === 'DELETE'
          ? fs.promises.rm(path.join(dir, blob[1]), { force: true }).then(() => res.writeHead(204).end())
          : Promise.resolve(res.writeHead(404).end());
  work.catch((err) => {
    if (!res.headersSent) res.writeHead(500).end(String(err));
    else res.destroy(err);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
