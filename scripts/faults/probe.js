'use strict';
// An upload that spans a freeze of the drive (docs/reliability.md#faults): the gateway's upload is
// BeginUpload (a call to the drive), the bytes to the object store, then CommitUpload (a call to
// the drive). The probe sends its body in two parts: the first before the freeze, the rest once the
// drive has begun the upload (its row is in drive.uploads) and been stopped, so that the commit is
// sent to a stopped drive. Issue 23: it must answer 503 or 504 within the deadline; the commit's
// deadline was once 120 s, and the upload waited for the drive as long as it was stopped.
const crypto = require('node:crypto');
const http = require('node:http');

const pg = require('pg');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens the upload and resolves once the drive has begun it (or with `begun: false` after 15 s);
 * `whileFrozen()` then sends the rest and resolves with the answer: status, error code and ms from
 * the rest being sent (status -1: none within `timeoutMs`).
 */
async function uploadAcrossFreeze({ url, key, accountId, pgUrl, timeoutMs }) {
  const bytes = crypto.randomBytes(4096);
  const db = new pg.Client({ connectionString: pgUrl });
  await db.connect();
  const uploads = async () => new Set((await db.query('SELECT id FROM drive.uploads WHERE account_id = $1', [accountId])).rows.map((r) => r.id));
  try {
    const before = await uploads();
    const req = http.request(new URL(`/drive/upload?name=frozen-${crypto.randomBytes(4).toString('hex')}.bin`, url), {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) },
    });
    const answer = new Promise((resolve) => {
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let code;
          try {
            code = JSON.parse(text)?.error?.code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode, code });
        });
        res.on('error', () => resolve({ status: 0 }));
      });
      req.on('error', (err) => resolve({ status: 0, failure: err.code ?? err.message }));
    });
    req.write(bytes.subarray(0, 1024));
    for (const until = Date.now() + 15_000; ; await sleep(50)) {
      const now = await uploads();
      if ([...now].some((id) => !before.has(id))) break;
      if (Date.now() > until) {
        req.destroy();
        return { begun: false, whileFrozen: async () => ({ begun: false, status: 0 }) };
      }
    }
    return {
      begun: true,
      async whileFrozen() {
        const sent = performance.now();
        req.end(bytes.subarray(1024));
        let timer;
        const r = await Promise.race([answer, new Promise((resolve) => (timer = setTimeout(() => resolve({ status: -1 }), timeoutMs)))]);
        clearTimeout(timer);
        if (r.status === -1) req.destroy();
        return { begun: true, ...r, ms: Math.round(performance.now() - sent) };
      },
    };
  } finally {
    await db.end();
  }
}

module.exports = { uploadAcrossFreeze };
