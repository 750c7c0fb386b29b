import { createHash } from 'node:crypto';
import net from 'node:net';

import { activeWatchers } from '@svc/agents';

import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * Live event streams (GET /threads/:id/events as text/event-stream, docs/threads.md) end with their
 * key: revoked or expired, within a second; and a stream's slot (SVC_SSE_MAX_STREAMS_PER_KEY) and
 * its watcher in the agents service (activeWatchers: each reads PostgreSQL every few seconds while
 * it lives) are released on every way a client can leave.
 */
const LIMIT = 3;
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SVC_SSE_MAX_STREAMS_PER_KEY: String(LIMIT) });
});
afterAll(() => t?.stop());

let n = 0;
async function person() {
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return res.body.key as string;
}
/** A thread of a new person, and a key of that person made for the stream. */
async function setup(keyBody: Record<string, unknown> = {}) {
  const root = await person();
  const agent = (await t.ok('POST', '/agents', root, { name: `agent ${++n}` })).body as { id: string };
  const thread = (await t.ok('POST', '/threads', root, { agentId: agent.id })).body as { id: string };
  const key = (await t.ok('POST', '/me/api-keys', root, { name: `stream ${++n}`, ...keyBody })).body as { key: string; id: string };
  return { root, thread, key };
}

type SseEvent = { event?: string; data: any };
/**
 * Opens a stream and reads it; `result(ms)` waits up to `ms` from its call for the stream to end
 * by itself (else the client drops it): whether it ended, and its events.
 */
async function readToEnd(key: string, threadId: string, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  let timer = setTimeout(() => ac.abort(), 30_000);
  const res = await fetch(`${t.url}/threads/${threadId}/events`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  });
  const events: SseEvent[] = [];
  let ended = false;
  let text = '';
  const opened = new Promise<void>((resolve) => {
    void (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += Buffer.from(chunk).toString('utf8');
          if (text.includes('\n\n')) resolve();
        }
        ended = true;
      } catch {
        // aborted: the stream did not end by itself
      } finally {
        clearTimeout(timer);
        resolve();
      }
    })();
  });
  return {
    status: res.status,
    opened,
    async result(ms = 3000) {
      clearTimeout(timer);
      timer = setTimeout(() => ac.abort(), ms);
      await until(() => ended || ac.signal.aborted, ms + 1000, { every: 20 });
      clearTimeout(timer);
      for (const block of text.split('\n\n').filter(Boolean)) {
        const e: SseEvent = { data: null };
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
        }
        if (e.data !== null) events.push(e);
      }
      return { ended, events };
    },
  };
}

const watchersBack = (to: number) => until(() => activeWatchers() <= to, 10_000, { what: `watchers back to ${to}` });

test('revoking the key ends its open stream within a second, with an error event saying so', async () => {
  const { root, thread, key } = await setup();
  const base = activeWatchers();
  const stream = await readToEnd(key.key, thread.id);
  expect(stream.status).toBe(200);
  await stream.opened;
  expect(activeWatchers()).toBe(base + 1);
  await t.ok('DELETE', `/me/api-keys/${key.id}`, root);
  const { ended, events } = await stream.result();
  expect(ended).toBe(true);
  expect(events.map((e) => e.event)).toEqual(['thread.created', 'error']);
  expect(events[1]!.data.error.code).toBe('key_revoked');
  await watchersBack(base);
});

test('a stream ends at its key’s expiry', async () => {
  const { thread, key } = await setup({ expiresInDays: 1 });
  await t.stack.backends
    .sql()
    .then((sql) => sql.query(`UPDATE keys.api_keys SET expires_at = now() + interval '1500 milliseconds' WHERE id = $1`, [key.id]));
  await (await t.stack.backends.cache()).del(`keys:verify:${createHash('sha256').update(key.key).digest('hex')}`);
  const stream = await readToEnd(key.key, thread.id);
  expect(stream.status).toBe(200);
  const { ended, events } = await stream.result(5000);
  expect(ended).toBe(true);
  expect(events[events.length - 1]!.data.error.code).toBe('key_expired');
});

test('a stream of a key below the revoked one ends too', async () => {
  const { root, thread, key } = await setup();
  const child = (await t.ok('POST', '/me/api-keys', key.key, { name: 'child' })).body as { key: string };
  const stream = await readToEnd(child.key, thread.id);
  await stream.opened;
  await t.ok('DELETE', `/me/api-keys/${key.id}`, root);
  const { ended, events } = await stream.result();
  expect([ended, events[events.length - 1]!.data.error.code]).toEqual([true, 'key_revoked']);
});

test('a member removed from an organization: their streams there end within a second; the owner’s and their own stay open', async () => {
  const owner = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `owner ${++n}` })).body as { key: string };
  const member = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `member ${++n}` })).body as {
    key: string;
    account: { id: string };
  };
  const org = (await t.ok('POST', '/accounts', owner.key, { kind: 'organization', name: `org ${++n}` })).body.id as string;
  await t.ok('POST', `/accounts/${org}/members`, owner.key, { accountId: member.account.id, role: 'member' });
  const inOrg = { 'x-svc-account': org };
  const agent = (await t.ok('POST', '/agents', owner.key, { name: `org agent ${++n}` }, inOrg)).body as { id: string };
  const thread = (await t.ok('POST', '/threads', owner.key, { agentId: agent.id }, inOrg)).body as { id: string };
  const ownAgent = (await t.ok('POST', '/agents', member.key, { name: `own agent ${++n}` })).body as { id: string };
  const ownThread = (await t.ok('POST', '/threads', member.key, { agentId: ownAgent.id })).body as { id: string };

  const members = await readToEnd(member.key, thread.id, inOrg);
  const owners = await readToEnd(owner.key, thread.id, inOrg);
  const own = await readToEnd(member.key, ownThread.id);
  expect([members.status, owners.status, own.status]).toEqual([200, 200, 200]);
  await Promise.all([members.opened, owners.opened, own.opened]);
  await t.ok('DELETE', `/accounts/${org}/members/${member.account.id}`, owner.key);
  const ended = await members.result();
  expect([ended.ended, ended.events.at(-1)?.event, ended.events.at(-1)?.data.error.code]).toEqual([true, 'error', 'membership_changed']);
  // The others did not end by themselves (each is dropped by the client after a short wait).
  expect((await owners.result(500)).ended).toBe(false);
  expect((await own.result(500)).ended).toBe(false);
  // Opened again, the removed member is refused like any request in that organization (a
  // non-member is told the organization is not found).
  expect((await t.call('GET', `/threads/${thread.id}/events`, { key: member.key, headers: inOrg })).status).toBe(404);
  expect((await t.call('GET', `/threads/${thread.id}`, { key: member.key, headers: inOrg })).status).toBe(404);
});

/** One raw HTTP/1.1 request for a stream, cut at `stage`. */
function cut(
  key: string,
  threadId: string,
  stage: 'after-send' | 'after-delay' | 'after-head' | 'mid-stream' | 'half-close',
  delayMs = 0,
): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
    let got = '';
    const done = () => {
      socket.destroy();
      resolve();
    };
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.on('connect', () => {
      socket.write(`GET /threads/${threadId}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`);
      if (stage === 'after-send') done();
      else if (stage === 'after-delay') setTimeout(done, delayMs);
      else if (stage === 'half-close') socket.end();
    });
    socket.on('data', (chunk) => {
      got += chunk.toString('utf8');
      // A refused request (429: the key's slots were all held at that moment) is over at its head.
      if ((stage === 'after-head' || !got.startsWith('HTTP/1.1 200')) && got.includes('\r\n\r\n')) done();
      if (stage === 'mid-stream' && got.includes('data: ')) done();
      if (stage === 'half-close' && got.includes('data: ')) done();
    });
    setTimeout(done, 5000);
  });
}

test('no way of leaving leaks a slot or a watcher: before the head, mid-stream, abruptly, half-closed', async () => {
  const { thread, key } = await setup();
  const base = activeWatchers();
  const stages = ['after-send', 'after-delay', 'after-head', 'mid-stream', 'half-close'] as const;
  // Each way several times over, concurrently (more than the limit at once), with the before-the-head
  // cut at several delays: while the key is verified, while the thread is read, as the head goes out.
  for (let round = 0; round < 4; round++) {
    await Promise.all(stages.flatMap((stage) => [0, 2, 5, 15, 40].map((delay) => cut(key.key, thread.id, stage, delay + round))));
  }
  await watchersBack(base);
  // Every slot is free again: the key opens the limit's worth of streams, and one more is refused.
  const acs = Array.from({ length: LIMIT }, () => new AbortController());
  const open = (ac?: AbortController) =>
    fetch(`${t.url}/threads/${thread.id}/events`, {
      headers: { authorization: `Bearer ${key.key}`, accept: 'text/event-stream' },
      signal: ac?.signal,
    });
  const held = await Promise.all(acs.map((ac) => open(ac)));
  expect(held.map((r) => r.status)).toEqual(acs.map(() => 200));
  const refused = await open();
  expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([429, 'too_many_streams']);
  await until(() => activeWatchers() >= base + LIMIT, 5000, { what: 'the open streams’ watchers' });
  for (const ac of acs) ac.abort();
  await watchersBack(base);
});

test('revocation releases the slots and watchers of every open stream of the key', async () => {
  const { root, thread, key } = await setup();
  const base = activeWatchers();
  const streams = await Promise.all(Array.from({ length: LIMIT }, () => readToEnd(key.key, thread.id)));
  await Promise.all(streams.map((s) => s.opened));
  expect(activeWatchers()).toBe(base + LIMIT);
  await t.ok('DELETE', `/me/api-keys/${key.id}`, root);
  const results = await Promise.all(streams.map((s) => s.result()));
  expect(results.map((r) => r.ended)).toEqual(streams.map(() => true));
  await watchersBack(base);
});
