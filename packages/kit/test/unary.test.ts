import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import * as grpc from '@grpc/grpc-js';

import { parseTarget, UnaryCallError, UnaryChannel } from '@svc/kit';

const GrpcStatus = grpc.status;

// The hand-written unary client against real grpc-js servers: connection rotation, restarts,
// dead peers and limits, the situations grpc-js's own client used to handle for us.
const echo = {
  Echo: {
    path: '/t.T/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
} as grpc.ServiceDefinition;

async function serve(options: grpc.ChannelOptions = {}, port = 0, reply?: (req: Buffer, md: grpc.Metadata, peer: string) => Buffer) {
  const server = new grpc.Server(options);
  server.addService(echo, {
    Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const req = call.request;
      if (req.toString() === 'fail') {
        const md = new grpc.Metadata();
        md.set('svc-error-code', 'boom');
        md.set('svc-error-details-bin', Buffer.from('{"a":1}'));
        return cb({ code: grpc.status.FAILED_PRECONDITION, details: 'it failed: 100% sure', metadata: md });
      }
      cb(null, reply ? reply(req, call.metadata, call.getPeer()) : Buffer.concat([Buffer.from('echo:'), req]));
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, port: bound, stop: () => new Promise<void>((r) => server.tryShutdown(() => r())) };
}

const call = (ch: UnaryChannel, body: string, deadlineMs = 2000, headers: Record<string, string> = {}) =>
  ch.call('/t.T/Echo', Buffer.from(body), { headers, deadlineMs });

const failure = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(UnaryCallError);
    return err as UnaryCallError;
  }
  throw new Error('expected the call to fail');
};

test('targets parse as grpc-js reads them', () => {
  expect(parseTarget('unix:/tmp/a.sock')).toEqual({ path: '/tmp/a.sock' });
  expect(parseTarget('unix:///tmp/a.sock')).toEqual({ path: '/tmp/a.sock' });
  expect(parseTarget('keys:50051')).toEqual({ host: 'keys', port: 50051 });
  expect(parseTarget('dns:///keys.svc:7000')).toEqual({ host: 'keys.svc', port: 7000 });
  expect(parseTarget('[::1]:9')).toEqual({ host: '::1', port: 9 });
  expect(parseTarget('keys')).toEqual({ host: 'keys', port: 443 });
});

test('a call carries its metadata; a failed call carries status, message and -bin metadata', async () => {
  const s = await serve({}, 0, (req, md) => Buffer.from(`${req}|${md.get('x-test')[0]}`));
  const ch = new UnaryChannel(`127.0.0.1:${s.port}`);
  expect((await call(ch, 'hi', 2000, { 'x-test': 'v1' })).toString()).toBe('hi|v1');
  const err = await failure(call(ch, 'fail'));
  expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
  expect(err.details).toBe('it failed: 100% sure');
  expect(err.get('svc-error-code')).toBe('boom');
  expect(err.get('svc-error-details-bin')).toEqual(Buffer.from('{"a":1}'));
  ch.close();
  await s.stop();
});

test('calls keep succeeding while the server rotates its connections (GOAWAY)', async () => {
  // The server ends every connection 300 ms after it opened (GOAWAY, then a grace period for the
  // calls in flight); calls sent after the GOAWAY are refused and retried on a new connection.
  // Each connection is a client port the server sees as the peer, so a new peer is a rotation the
  // client went through. (With 50 ms, a busy machine could let the fresh connection age out too
  // before the retried call reached it: refused twice, and the client retries once.)
  const peers = new Set<string>();
  const s = await serve({ 'grpc.max_connection_age_ms': 300, 'grpc.max_connection_age_grace_ms': 1000 }, 0, (req, _md, peer) => {
    peers.add(peer);
    return Buffer.concat([Buffer.from('echo:'), req]);
  });
  const ch = new UnaryChannel(`127.0.0.1:${s.port}`);
  const ROTATIONS = 5;
  // However slow the machine: the loop ends after enough rotations, or (a client stuck on one
  // connection) after 20 s, and then the assertion below fails.
  const giveUp = Date.now() + 20_000;
  try {
    for (let batch = 0; peers.size <= ROTATIONS && Date.now() < giveUp; batch++) {
      // A generous deadline: this is not a test of deadlines, and a jest worker on a loaded machine
      // can stall for seconds (its server is in the same process, so nothing moves meanwhile).
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(ch, `m${batch}.${i}`, 10_000)));
      expect(answers.map(String)).toEqual(Array.from({ length: 8 }, (_, i) => `echo:m${batch}.${i}`));
    }
    expect(peers.size).toBeGreaterThan(ROTATIONS);
  } finally {
    ch.close();
    await s.stop();
  }
});

test('a server that restarts is reached again; while it is down calls fail fast as unavailable', async () => {
  const first = await serve();
  const ch = new UnaryChannel(`127.0.0.1:${first.port}`);
  expect(String(await call(ch, 'a'))).toBe('echo:a');
  first.server.forceShutdown();
  const started = Date.now();
  expect((await failure(call(ch, 'b'))).code).toBe(GrpcStatus.UNAVAILABLE);
  expect(Date.now() - started).toBeLessThan(1000);
  const second = await serve({}, first.port);
  expect(String(await call(ch, 'c'))).toBe('echo:c');
  ch.close();
  await second.stop();
});

test('a peer that accepts but never answers ends in the deadline, and the connection is replaced', async () => {
  const sockets: net.Socket[] = [];
  const silent = net.createServer((sock) => sockets.push(sock));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const ch = new UnaryChannel(`127.0.0.1:${(silent.address() as net.AddressInfo).port}`);
  for (let i = 0; i < 2; i++) {
    const started = Date.now();
    expect((await failure(call(ch, 'x', 150))).code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(Date.now() - started).toBeLessThan(1000);
  }
  // The stalled connection was dropped, so the second call opened another one.
  expect(sockets.length).toBe(2);
  ch.close();
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

test('a response larger than the limit is refused; a closed channel refuses calls', async () => {
  const s = await serve({}, 0, () => Buffer.alloc(64 * 1024, 1));
  const small = new UnaryChannel(`127.0.0.1:${s.port}`, 1024);
  expect((await failure(call(small, 'big'))).code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
  small.close();
  expect((await failure(call(small, 'again'))).code).toBe(GrpcStatus.UNAVAILABLE);
  await s.stop();
});

test('a call refused unprocessed (REFUSED_STREAM) is sent again, on a fresh connection each time, until one takes it', async () => {
  // An HTTP/2 peer that refuses the first three streams it sees, each on a new connection, then
  // answers as a gRPC server: as when each retry's new connection is rotated away on a busy host.
  let refusals = 0;
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  server.on('session', (s) => sessions.add(s));
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    if (refusals < 3) {
      refusals++;
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.on('data', () => {});
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const msg = Buffer.from('ok');
      const frame = Buffer.alloc(5 + msg.length);
      frame.writeUInt32BE(msg.length, 1);
      msg.copy(frame, 5);
      stream.end(frame);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const ch = new UnaryChannel(`127.0.0.1:${port}`);
  try {
    expect((await call(ch, 'x', 5000)).toString()).toBe('ok');
    expect(refusals).toBe(3);
    expect(sessions.size).toBe(4);
    // A peer that keeps refusing ends the call as unavailable, not in a loop.
    refusals = -100;
    expect((await failure(call(ch, 'y', 5000))).code).toBe(GrpcStatus.UNAVAILABLE);
  } finally {
    ch.close();
    for (const s of sessions) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('answers that arrived while the process was stalled past their deadline are taken, not failed', async () => {
  // The server runs in another process, so it answers while this one is busy. Each answer is
  // marked in a file once sent; this process then stays busy until every mark is there and the
  // deadline has passed. Node fires due timers before it reads its sockets, so without care the
  // deadline would fail calls whose answers were already waiting.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stall-'));
  const marks = path.join(dir, 'marks');
  const script = `
    const grpc = require(${JSON.stringify(require.resolve('@grpc/grpc-js'))});
    const fs = require('node:fs');
    const id = (b) => b;
    const server = new grpc.Server();
    server.addService({ Echo: { path: '/t.T/Echo', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id } }, {
      Echo: (call, cb) => {
        cb(null, Buffer.concat([Buffer.from('echo:'), call.request]));
        if (call.request.toString() !== 'warm') setTimeout(() => fs.appendFileSync(${JSON.stringify(marks)}, 'x'), 50);
      },
    });
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => console.log(port));
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
    });
    const ch = new UnaryChannel(`127.0.0.1:${port}`);
    expect(String(await call(ch, 'warm'))).toBe('echo:warm');
    const DEADLINE_MS = 200;
    const pending = Array.from({ length: 4 }, (_, i) => call(ch, `s${i}`, DEADLINE_MS).then(String, (e: UnaryCallError) => `failed: ${e.details}`));
    // One turn of the loop writes the requests; then this process stalls.
    await new Promise((r) => setImmediate(r));
    const started = Date.now();
    const giveUp = started + 20_000;
    const answered = () => (fs.existsSync(marks) ? fs.readFileSync(marks, 'utf8').length : 0);
    while ((answered() < 4 || Date.now() < started + DEADLINE_MS + 100) && Date.now() < giveUp) {
      // busy: no timers, no sockets
    }
    expect(answered()).toBe(4);
    expect(await Promise.all(pending)).toEqual(['echo:s0', 'echo:s1', 'echo:s2', 'echo:s3']);
    ch.close();
  } finally {
    child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
