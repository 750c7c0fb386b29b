import http from 'node:http';
import type { AddressInfo } from 'node:net';

import express from 'express';

import { DomainError } from '@svc/kit';

import { readContent } from '../../dist/http/multipart.js';

// Multipart forms as the upload operation reads them (busboy at the edge): the fields before the
// first file part, then that part's bytes, streamed; a malformed form fails with invalid_multipart.

let server: http.Server;
let port: number;

beforeAll(async () => {
  const app = express();
  app.post('/form', async (req, res) => {
    try {
      const c = await readContent(req, { kinds: ['bytes', 'multipart'], description: '' });
      const bufs: Buffer[] = [];
      for await (const b of c.stream) bufs.push(b);
      res.json({ fields: c.fields, filename: c.filename ?? null, type: c.type ?? null, body: Buffer.concat(bufs).toString('latin1') });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      res.status(400).json({ code: err.code, message: err.message });
    }
  });
  server = http.createServer(app);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

/** Posts `body` in pieces of `chunk` bytes, each its own write. */
function post(body: Buffer, contentType: string, chunk: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ port, host: '127.0.0.1', path: '/form', method: 'POST', headers: { 'content-type': contentType } }, (res) => {
      const bufs: Buffer[] = [];
      res.on('data', (b: Buffer) => bufs.push(b));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(bufs).toString()) }));
    });
    req.on('error', reject);
    (async () => {
      for (let i = 0; i < body.length; i += chunk) {
        req.write(body.subarray(i, i + chunk));
        if (chunk < 16 && i % 64 === 0) await new Promise((r) => setImmediate(r));
      }
      req.end();
    })().catch(reject);
  });
}

test('the fields before the file part, then its bytes, whatever the chunking; boundaries inside data are not boundaries', async () => {
  const boundary = '----x7';
  const data = 'line\r\n------x-not\r\n--\r\n------x\r\n--';
  const body = Buffer.from(
    `preamble\r\n--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nn.txt\r\n--${boundary}\r\n` +
      `Content-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: text/plain\r\n\r\n${data}\r\n--${boundary}--\r\nepilogue`,
  );
  for (const chunk of [1, 3, 7, 13, 64, 1000]) {
    const res = await post(body, `multipart/form-data; boundary=${boundary}`, chunk);
    expect(res).toEqual({ status: 200, body: { fields: { name: 'n.txt' }, filename: 'f.bin', type: 'text/plain', body: data } });
  }
  // A quoted boundary, and one after another parameter.
  const quoted = Buffer.from(`--a b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nxyz\r\n--a b--\r\n`);
  expect((await post(quoted, 'multipart/form-data; boundary="a b"', 1000)).body.body).toBe('xyz');
  const later = Buffer.from(`--abc\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nxyz\r\n--abc--\r\n`);
  expect((await post(later, 'multipart/form-data; charset=utf-8; boundary=abc', 1000)).body.body).toBe('xyz');
});

test('Content-Disposition parameters: escaped quotes and RFC 5987 file names', async () => {
  const escaped = Buffer.from(`--b\r\nContent-Disposition: form-data; name="file"; filename="a \\"b\\".txt"\r\n\r\nx\r\n--b--\r\n`);
  expect((await post(escaped, 'multipart/form-data; boundary=b', 1000)).body.filename).toBe('a "b".txt');
  const utf8 = Buffer.from(`--b\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''%E6%97%A5.txt\r\n\r\nx\r\n--b--\r\n`);
  expect((await post(utf8, 'multipart/form-data; boundary=b', 1000)).body.filename).toBe('日.txt');
});

test('a body cut short is malformed, and no bytes count', async () => {
  const body = Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nabc');
  const res = await post(body, 'multipart/form-data; boundary=b', 4);
  expect(res.status).toBe(400);
  expect(res.body.code).toBe('invalid_multipart');
});

test('a form without a file part, a field too long, a form without a boundary', async () => {
  const none = Buffer.from(`--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--\r\n`);
  expect((await post(none, 'multipart/form-data; boundary=b', 1000)).body.code).toBe('missing_file');
  const long = Buffer.from(`--b\r\nContent-Disposition: form-data; name="name"\r\n\r\n${'x'.repeat(5000)}\r\n--b--\r\n`);
  expect((await post(long, 'multipart/form-data; boundary=b', 1000)).body.code).toBe('invalid_multipart');
  expect((await post(Buffer.from('x'), 'multipart/form-data', 1000)).body.code).toBe('invalid_multipart');
});

test('a body that is not a form is the bytes themselves', async () => {
  const res = await post(Buffer.from('{"a":1}'), 'application/json', 1000);
  expect(res.body).toEqual({ fields: {}, filename: null, type: 'application/json', body: '{"a":1}' });
});
