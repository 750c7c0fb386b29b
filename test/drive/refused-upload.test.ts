import http from 'node:http';

import { startTestStack, type TestStack } from '../support/stack';

/**
 * An upload refused before its bytes are read (a 412 of If-None-Match: *) is answered at once, and
 * the gateway reads and drops the rest of the body (up to a bound) instead of closing the
 * connection under the client: a client still sending sees the answer, not a reset (on Linux a
 * reset also discards an answer the client has received but not yet read), and its keep-alive
 * connection serves the next request.
 */

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 60_000);
afterAll(() => t?.stop());

/** Sends the whole body and reads the answer; a failure of the connection is the outcome. */
function upload(agent: http.Agent, headers: Record<string, string>, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request(new URL('/v1/drive/upload?name=taken.bin', t.url), {
      method: 'POST',
      agent,
      headers: { ...headers, 'content-length': String(body.length) },
    });
    let answer = '';
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => (answer = `${res.statusCode} ${(JSON.parse(text) as { error: { code: string } }).error.code}`));
    });
    req.on('error', (err) => resolve(`failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
    // Done when the body has gone and the answer has come.
    req.on('finish', () => {
      const check = () => (answer ? resolve(`${answer}${req.reusedSocket ? ' (kept alive)' : ''}`) : setTimeout(check, 10));
      check();
    });
    req.end(body);
  });
}

test('large uploads refused with 412 get their answer, not a reset, and the connection serves on', async () => {
  const auth = { authorization: `Bearer ${t.bootstrapKey}`, 'content-type': 'application/octet-stream' };
  const first = await fetch(`${t.url}/v1/drive/upload?name=taken.bin`, { method: 'POST', headers: auth, body: 'x' });
  expect(first.status).toBe(201);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) outcomes.push(await upload(agent, { ...auth, 'if-none-match': '*' }, Buffer.alloc(16 * 1024 * 1024, i)));
    expect(outcomes).toEqual(['412 name_taken', '412 name_taken (kept alive)', '412 name_taken (kept alive)', '412 name_taken (kept alive)']);
  } finally {
    agent.destroy();
  }
}, 60_000);
