import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';

import { newId, PrincipalSigner } from '@svc/kit';
import { drive } from '@svc/proto';

import { abortedUpload, accountId, collectGarbage, LIMIT, quoted, req, sha, sql, t, uploadFile, useDriveStack } from '../support/drive';
import { ERROR_BODY } from '../support/stack';
import { until } from '../support/wait';

// The drive loses nothing: aborted and failed writes leave no file and no stray blob, every
// committed version is readable, and garbage is collected.
useDriveStack();

describe('nothing lost', () => {
  test('a client that disconnects mid-upload leaves the previous version intact and readable', async () => {
    const { body } = await uploadFile(`abort-${Date.now()}.bin`, 'the old version');
    const uploadsBefore = (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n;
    await abortedUpload(
      `/drive/${body.id}/content`,
      { authorization: `Bearer ${t.bootstrapKey}`, 'if-match': quoted('the old version') },
      randomBytes(256 * 1024),
      1024 * 1024,
    );
    const created = `abort-new-${Date.now()}.bin`;
    await abortedUpload(`/drive/upload?name=${created}`, { authorization: `Bearer ${t.bootstrapKey}` }, randomBytes(100_000), 500_000);
    await until(async () => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n === uploadsBefore);
    const now = await req('GET', `/drive/${body.id}/content`);
    expect(now.status).toBe(200);
    expect(now.bytes.toString()).toBe('the old version');
    expect(now.headers.get('etag')).toBe(quoted('the old version'));
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.map((i: any) => i.name)).not.toContain(created);
    // No temporary blob is left behind.
    const tmp = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive-tmp');
    expect(fs.existsSync(tmp) ? fs.readdirSync(tmp) : []).toEqual([]);
  });

  test('every stored blob hashes to its name; the same bytes are stored once', async () => {
    const content = randomBytes(300_000);
    const a = await uploadFile(`same-a-${Date.now()}.bin`, content);
    const b = await uploadFile(`same-b-${Date.now()}.bin`, content);
    expect(a.body.sha256).toBe(b.body.sha256);
    const rows = await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.blobs WHERE sha256 = $1', [sha(content)]);
    expect(rows[0]!.n).toBe(1);
    const root = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId);
    for (const dir of fs.readdirSync(root)) {
      for (const f of fs.readdirSync(path.join(root, dir))) {
        expect(sha(fs.readFileSync(path.join(root, dir, f)))).toBe(f);
      }
    }
  });

  const crcOf = async (sha256: string) =>
    (await sql<{ crc32: string | number | null }>('SELECT crc32 FROM drive.blobs WHERE account_id = $1 AND sha256 = $2', [accountId, sha256]))[0]!
      .crc32;

  // Content uploaded now is checked by its CRC-32 (kept with its blob); content stored before
  // CRCs were kept (no CRC: set to NULL here) by its SHA-256. Both refuse a damaged blob.
  test.each([
    ['with its CRC-32', true],
    ['stored without a CRC-32 (checked by SHA-256)', false],
  ])('a stored blob that no longer matches its file is never served whole; a range of it still is (%s)', async (_, withCrc) => {
    const content = randomBytes(3 * 1024 * 1024); // hashed on a worker (over 1 MiB)
    const small = randomBytes(1000); // hashed inline
    for (const bytes of [content, small]) {
      const up = await uploadFile(`damaged-${Date.now()}.bin`, bytes);
      expect(up.status).toBe(201);
      // The gateway computed the CRC-32 in the same pass as the SHA-256.
      expect(Number(await crcOf(up.body.sha256))).toBe(zlib.crc32(bytes));
      if (!withCrc) {
        await sql('UPDATE drive.blobs SET crc32 = NULL WHERE account_id = $1 AND sha256 = $2', [accountId, up.body.sha256]);
      }
      const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, up.body.sha256.slice(0, 2), up.body.sha256);
      const damaged = Buffer.from(bytes);
      damaged[damaged.length - 10] ^= 0xff; // same length, one byte flipped near the end
      fs.writeFileSync(blob, damaged);
      try {
        // The last chunk is withheld: the client sees a cut transfer (or, for a one-chunk file, a
        // closed connection), never a complete damaged file.
        const whole = async () => {
          const res = await fetch(`${t.url}/v1/drive/${up.body.id}/content`, { headers: { authorization: `Bearer ${t.bootstrapKey}` } });
          expect(res.headers.get('content-length')).toBe(String(bytes.length));
          return Buffer.from(await res.arrayBuffer());
        };
        await expect(whole()).rejects.toThrow();
        const range = await req('GET', `/v1/drive/${up.body.id}/content`, { headers: { range: 'bytes=0-99' } });
        expect(range.status).toBe(206);
        expect(range.bytes.equals(bytes.subarray(0, 100))).toBe(true);
      } finally {
        fs.writeFileSync(blob, bytes);
      }
      expect((await req('GET', `/v1/drive/${up.body.id}/content`)).bytes.equals(bytes)).toBe(true);
    }
  });

  test('a reader that goes away mid-download frees the blob (its file is closed); the next reader gets it whole', async () => {
    const bytes = randomBytes(LIMIT - 1000);
    const up = await uploadFile(`gone-${Date.now()}.bin`, bytes);
    const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, up.body.sha256.slice(0, 2), up.body.sha256);
    // The stack runs in this process: the files it holds open are this process's.
    const open = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === blob;
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    await new Promise<void>((resolve, reject) => {
      const r = http.get(`${t.url}/v1/drive/${up.body.id}/content`, { headers: { authorization: `Bearer ${t.bootstrapKey}` } }, (res) => {
        res.once('data', () => {
          r.destroy();
          resolve();
        });
      });
      r.on('error', () => {});
      r.on('timeout', () => reject(new Error('no answer')));
    });
    if (fs.existsSync('/proc/self/fd')) await until(() => open() === 0, 15_000, { what: 'the blob to be closed' });
    expect((await req('GET', `/v1/drive/${up.body.id}/content`)).bytes.equals(bytes)).toBe(true);
  });

  test('a whole read is checked against the CRC-32 on record: a wrong one refuses intact content', async () => {
    const bytes = randomBytes(2 * 1024 * 1024);
    const up = await uploadFile(`crc-${Date.now()}.bin`, bytes);
    const crc = zlib.crc32(bytes);
    await sql('UPDATE drive.blobs SET crc32 = $3 WHERE account_id = $1 AND sha256 = $2', [accountId, up.body.sha256, (crc + 1) % 2 ** 32]);
    try {
      const res = await fetch(`${t.url}/v1/drive/${up.body.id}/content`, { headers: { authorization: `Bearer ${t.bootstrapKey}` } });
      expect(res.status).toBe(200);
      await expect(res.arrayBuffer()).rejects.toThrow();
    } finally {
      await sql('UPDATE drive.blobs SET crc32 = $3 WHERE account_id = $1 AND sha256 = $2', [accountId, up.body.sha256, crc]);
    }
    expect((await req('GET', `/v1/drive/${up.body.id}/content`)).bytes.equals(bytes)).toBe(true);
  });

  test('content written any way has its CRC-32: a file tool writes one, a copy and a restored version share it, an upload fills a missing one', async () => {
    const call = (method: string, p: string, body?: unknown) => t.call(method as 'GET', p, { key: t.bootstrapKey, body });
    const stamp = Date.now();
    const written = (await call('PUT', '/drive/text', { path: `crc-${stamp}/a.txt`, content: 'first' })).body;
    expect(Number(await crcOf(sha('first')))).toBe(zlib.crc32('first'));
    await call('PUT', '/drive/text', { path: `crc-${stamp}/a.txt`, content: 'second' });
    const copy = await call('POST', `/drive/${written.id}/copy`, {});
    expect(copy.status).toBe(201);
    const [version] = (await call('GET', `/drive/${written.id}/versions`)).body.versions;
    expect((await call('POST', `/drive/${written.id}/versions/${version.id}/restore`, {})).status).toBe(200);
    for (const content of ['first', 'second']) expect(Number(await crcOf(sha(content)))).toBe(zlib.crc32(content));
    expect((await req('GET', `/v1/drive/${written.id}/content`)).bytes.toString()).toBe('first');
    expect((await req('GET', `/v1/drive/${copy.body.id}/content`)).bytes.toString()).toBe('second');

    // Content stored before CRCs were kept gets one from the next upload of the same bytes.
    const old = randomBytes(5000);
    const first = await uploadFile(`crc-old-${stamp}.bin`, old);
    await sql('UPDATE drive.blobs SET crc32 = NULL WHERE account_id = $1 AND sha256 = $2', [accountId, first.body.sha256]);
    expect((await req('GET', `/v1/drive/${first.body.id}/content`)).bytes.equals(old)).toBe(true);
    expect((await uploadFile(`crc-again-${stamp}.bin`, old)).status).toBe(201);
    expect(Number(await crcOf(first.body.sha256))).toBe(zlib.crc32(old));
  });

  test('content the drive reads itself is checked too: a damaged version is neither read nor restored, nothing is written', async () => {
    const call = (method: string, p: string, body?: unknown) => t.call(method as 'GET', p, { key: t.bootstrapKey, body });
    const stamp = Date.now();
    const first = `first ${stamp}`;
    const written = (await call('PUT', '/drive/text', { path: `damaged-version-${stamp}/a.txt`, content: first })).body;
    await call('PUT', '/drive/text', { path: `damaged-version-${stamp}/a.txt`, content: 'second' });
    const [version] = (await call('GET', `/drive/${written.id}/versions`)).body.versions;
    const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, sha(first).slice(0, 2), sha(first));
    fs.writeFileSync(blob, Buffer.from(first.toUpperCase())); // same length, other bytes
    try {
      for (const [method, p] of [
        ['GET', `/drive/${written.id}/versions/${version.id}`],
        ['POST', `/drive/${written.id}/versions/${version.id}/restore`],
      ] as const) {
        const res = await call(method, p, method === 'POST' ? {} : undefined);
        expect([p, res.status, res.body.error?.code]).toEqual([p, 500, 'content_damaged']);
        expect(res.body).toEqual(ERROR_BODY);
      }
      // The file is as it was: the damaged bytes were not stored as a new version.
      expect((await req('GET', `/v1/drive/${written.id}/content`)).bytes.toString()).toBe('second');
      expect((await call('GET', `/drive/${written.id}/versions`)).body.versions).toHaveLength(1);
    } finally {
      fs.writeFileSync(blob, first);
    }
    expect((await call('POST', `/drive/${written.id}/versions/${version.id}/restore`, {})).status).toBe(200);
  });

  test('a blob store that cannot take an upload answers 503 storage_unavailable; nothing is written', async () => {
    const tmpDir = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive-tmp');
    const name = `unstorable-${Date.now()}.bin`;
    fs.rmSync(tmpDir, { recursive: true, force: true });
    fs.writeFileSync(tmpDir, 'not a folder'); // every put under drive-tmp/ now fails
    try {
      const res = await uploadFile(name, randomBytes(5000));
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject(ERROR_BODY);
      expect(res.body.error.code).toBe('storage_unavailable');
    } finally {
      fs.rmSync(tmpDir, { force: true });
    }
    const listed = await req('GET', '/drive');
    expect(listed.body.items.map((i: { name: string }) => i.name)).not.toContain(name);
    await until(async () => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads'))[0]!.n === 0);
    expect((await uploadFile(name, 'stored now')).status).toBe(201);
  });

  test('a file whose stored content is gone answers 500 content_missing with the error body', async () => {
    const bytes = randomBytes(2000);
    const up = await uploadFile(`lost-${Date.now()}.bin`, bytes);
    const blob = path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, up.body.sha256.slice(0, 2), up.body.sha256);
    fs.rmSync(blob);
    try {
      const res = await req('GET', `/drive/${up.body.id}/content`);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject(ERROR_BODY);
      expect(res.body.error.code).toBe('content_missing');
    } finally {
      fs.writeFileSync(blob, bytes);
    }
  });

  test('the service side of an upload: it belongs to its account, and a commit checks what the blob holds', async () => {
    const signer = new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!);
    const as = async (account: string) => ({
      principalToken: (await signer.sign({ kind: 'human', userId: account, accountId: account, channel: 'api' })).token,
    });
    const client = t.stack.registry.client('drive', drive.DriveServiceService, 'svc.drive.v1.DriveService');
    const blobs = await t.stack.backends.blobs();
    const header = { name: `steps-${Date.now()}.txt`, requirePrecondition: false, overwrite: false, lockTokens: [] };
    const bytes = Buffer.from('written by the gateway');
    const pending = async (id: string) => (await sql<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads WHERE id = $1', [id]))[0]!.n;

    const first = await client.beginUpload(header, await as(accountId));
    expect(first.blobKey).toBe(`drive-tmp/${first.uploadId}`);
    await blobs.put(first.blobKey, bytes);
    const commit = { header, uploadId: first.uploadId, sha256: sha(bytes), size: bytes.length };
    // Another account cannot commit (or abort) it: the upload does not exist for it.
    await expect(client.commitUpload(commit, await as(newId('acct')))).rejects.toMatchObject({ code: 'upload_not_found' });
    await client.abortUpload({ uploadId: first.uploadId }, await as(newId('acct')));
    expect(await pending(first.uploadId)).toBe(1);
    // No content at the upload's key (a gateway on another blob store): refused, and the upload is gone.
    const orphan = await client.beginUpload(header, await as(accountId));
    await expect(client.commitUpload({ ...commit, uploadId: orphan.uploadId }, await as(accountId))).rejects.toMatchObject({
      code: 'upload_content_missing',
    });
    expect(await pending(orphan.uploadId)).toBe(0);
    // A size the blob does not hold: refused, and the upload and its blob are gone.
    await expect(client.commitUpload({ ...commit, size: bytes.length + 1 }, await as(accountId))).rejects.toMatchObject({
      code: 'upload_incomplete',
    });
    expect(await pending(first.uploadId)).toBe(0);
    expect(await blobs.stat(first.blobKey)).toBeNull();
    await expect(client.commitUpload(commit, await as(accountId))).rejects.toMatchObject({ code: 'upload_not_found' });
    await expect(client.commitUpload({ ...commit, sha256: 'not-a-digest' }, await as(accountId))).rejects.toMatchObject({ code: 'invalid_request' });
    // An id this service never makes (a path into the blob store) is unknown, as any other.
    for (const uploadId of ['../drive/x', 'upl_x', `ver_${first.uploadId.slice(4)}`]) {
      await expect(client.commitUpload({ ...commit, uploadId }, await as(accountId))).rejects.toMatchObject({ code: 'upload_not_found' });
    }

    const second = await client.beginUpload(header, await as(accountId));
    await blobs.put(second.blobKey, bytes);
    const done = await client.commitUpload({ ...commit, uploadId: second.uploadId }, await as(accountId));
    expect(done.item).toMatchObject({ name: header.name, size: bytes.length, sha256: sha(bytes) });
    expect(await pending(second.uploadId)).toBe(0);
    expect(await blobs.stat(second.blobKey)).toBeNull();
    expect((await req('GET', `/drive/${done.item!.id}/content`)).bytes.equals(bytes)).toBe(true);
    // The name is taken now: a second begin fails before any byte is sent.
    await expect(client.beginUpload(header, await as(accountId))).rejects.toMatchObject({ code: 'name_taken' });
  });

  test('content an open upload is placing is not collected, whatever its hold; once the upload ends it is', async () => {
    const bytes = randomBytes(1000);
    const digest = sha(bytes);
    const blobs = await t.stack.backends.blobs();
    const key = `drive/${accountId}/${digest.slice(0, 2)}/${digest}`;
    await blobs.put(key, bytes);
    // What an upload leaves between moving its blob into place and its commit: a hold that may
    // already be over (grace 0), no item yet, and the upload row naming the content.
    const uploadId = newId('upl');
    await sql(`INSERT INTO drive.blobs (account_id, sha256, size, held_until) VALUES ($1, $2, $3, now() - interval '1 hour')`, [
      accountId,
      digest,
      bytes.length,
    ]);
    await sql(`INSERT INTO drive.uploads (id, account_id, tmp_key, sha256) VALUES ($1, $2, $3, $4)`, [
      uploadId,
      accountId,
      `drive-tmp/${uploadId}`,
      digest,
    ]);
    await collectGarbage(0);
    expect(await blobs.stat(key)).toEqual({ size: bytes.length });
    await sql(`DELETE FROM drive.uploads WHERE id = $1`, [uploadId]);
    await collectGarbage(0);
    expect(await blobs.stat(key)).toBeNull();
  });

  test('replaced content whose version is deleted, and deleted content, is collected after the grace period; current content stays', async () => {
    const { body } = await uploadFile(`gc-${Date.now()}.bin`, 'gc version one');
    await req('PUT', `/drive/${body.id}/content`, { body: 'gc version two', headers: { 'if-match': quoted('gc version one') } });
    const blob = (s: string) => path.join(t.env.SVC_DATA_DIR!, 'blobs', 'drive', accountId, sha(s).slice(0, 2), sha(s));
    expect(fs.existsSync(blob('gc version one'))).toBe(true);
    // Within the grace period nothing referenced a moment ago is removed.
    await collectGarbage(3600);
    expect(fs.existsSync(blob('gc version one'))).toBe(true);
    // The replaced content is kept as a version: collected only once that version is deleted.
    await collectGarbage(0);
    expect(fs.existsSync(blob('gc version one'))).toBe(true);
    const [kept] = (await req('GET', `/drive/${body.id}/versions`)).body.versions;
    expect((await req('DELETE', `/drive/${body.id}/versions/${kept.id}`)).status).toBe(200);
    const res = await collectGarbage(0);
    expect(res.blobsRemoved).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(blob('gc version one'))).toBe(false);
    expect(fs.existsSync(blob('gc version two'))).toBe(true);
    expect((await req('GET', `/drive/${body.id}/content`)).bytes.toString()).toBe('gc version two');
    // The temporary blob of an upload whose process died is collected too.
    const blobs = await t.stack.backends.blobs();
    await blobs.put('drive-tmp/upl_dead', Buffer.from('partial'));
    await sql(
      `INSERT INTO drive.uploads (id, account_id, tmp_key, started_at) VALUES ('upl_dead', $1, 'drive-tmp/upl_dead', now() - interval '2 days')`,
      [accountId],
    );
    expect((await collectGarbage(3600)).uploadsRemoved).toBe(1);
    expect(await blobs.stat('drive-tmp/upl_dead')).toBeNull();
  });

  test('a file over the size limit answers 413, declared or streamed, and is not stored', async () => {
    const name = `big-${Date.now()}.bin`;
    const declared = await uploadFile(name, randomBytes(LIMIT + 1));
    expect(declared.status).toBe(413);
    expect(declared.body.error.code).toBe('file_too_large');
    // Streamed without a length: stopped when it crosses the limit.
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(randomBytes(1024 * 1024));
        c.close();
      },
    });
    const res = await fetch(`${t.url}/drive/upload?name=${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.bootstrapKey}` },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.map((i: any) => i.name)).not.toContain(name);
  });
});
