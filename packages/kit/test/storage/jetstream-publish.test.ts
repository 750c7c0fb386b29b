import * as nats from 'nats';

import { randomName, REAL } from '../../../../test/support/backends';
import { createJetStreamPublisher } from '../../src/storage/jetstream-publish';

// The bus's JetStream publish, against the real server: stored once per message id, refused when
// no stream takes the subject, rejected when nothing acknowledges it in time.
const maybe = REAL.nats ? describe : describe.skip;

maybe('JetStream publish on one reply subscription', () => {
  const stream = randomName('PUB').toUpperCase();
  const subject = (s: string) => `${stream.toLowerCase()}.${s}`;
  let nc: nats.NatsConnection;
  let jsm: nats.JetStreamManager;

  beforeAll(async () => {
    nc = await nats.connect({ servers: REAL.nats! });
    jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`], duplicate_window: 60e9 });
  });
  afterAll(async () => {
    await jsm.streams.delete(stream).catch(() => false);
    await nc.close();
  });

  test('stores each message once, with its headers, in the order sent; a repeated id is acknowledged and not stored again', async () => {
    const p = createJetStreamPublisher(nats, nc, (err) => {
      throw err;
    });
    const body = (n: number) => Buffer.from(JSON.stringify({ n }));
    await Promise.all([1, 2, 3].map((n) => p.publish(subject('a'), body(n), `m${n}`, { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` })));
    await p.publish(subject('a'), body(2), 'm2', {}); // a retry of m2
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(3);
    const stored = await Promise.all([1, 2, 3].map((seq) => jsm.streams.getMessage(stream, { seq })));
    expect(stored.map((m) => JSON.parse(Buffer.from(m.data).toString()).n)).toEqual([1, 2, 3]);
    expect(stored.map((m) => m.header.get('Nats-Msg-Id'))).toEqual(['m1', 'm2', 'm3']);
    expect(stored[0]!.header.get('traceparent')).toBe(`00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`);
    p.close();
  });

  test('a subject no stream takes is refused at once', async () => {
    const p = createJetStreamPublisher(nats, nc, () => {});
    await expect(p.publish(`${randomName('nostream')}.x`, Buffer.from('{}'), 'x1', {})).rejects.toThrow(/no stream takes this subject/);
    p.close();
  });

  test('an answer that is not an acknowledgement is refused; no answer in time is a timeout; close rejects what waits', async () => {
    // Outside any stream, a plain subscriber answers the first message with an error and never
    // answers the second.
    const other = randomName('plain');
    let seen = 0;
    const sub = nc.subscribe(`${other}.>`, {
      callback: (_err, msg) => {
        if (seen++ === 0)
          msg.respond(Buffer.from(JSON.stringify({ error: { code: 400, err_code: 10060, description: 'expected stream does not match' } })));
      },
    });
    const p = createJetStreamPublisher(nats, nc, () => {}, 300);
    await expect(p.publish(`${other}.a`, Buffer.from('{}'), 'y1', {})).rejects.toThrow(/expected stream does not match \(10060\)/);
    const started = Date.now();
    await expect(p.publish(`${other}.a`, Buffer.from('{}'), 'y2', {})).rejects.toThrow(/within 300 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    const waiting = p.publish(`${other}.a`, Buffer.from('{}'), 'y3', {});
    p.close();
    await expect(waiting).rejects.toThrow(/closed/);
    sub.unsubscribe();
  });
});
