import fs from 'node:fs';
import http from 'node:http';

import { startTestStack, type TestStack } from '../support/stack';
import { withTools } from '../support/tools';
import { until } from '../support/wait';

/**
 * Per-account caps on heavy work (docs/reliability.md, "Fair shares"), with two accounts: uploads
 * in progress, drive scans (grep), and Git requests. The account past its cap gets 429 with
 * Retry-After and the limit named; the other account is served all along. Uploads and Git hold
 * their slots on a request body the test keeps open, so what is in progress is the test's choice,
 * not the machine's pace.
 */
const withGit = withTools('the Git fair-share test', { name: 'git', install: 'apt-get install -y git' });

let t: TestStack;
let ada: string;
let adaAccount: string;
let bob: string;
beforeAll(async () => {
  t = await startTestStack({
    SVC_UPLOADS_PER_ACCOUNT: '2',
    SVC_DRIVE_SCANS_PER_ACCOUNT: '1',
    SVC_GIT_BUILDS_PER_ACCOUNT: '2',
    // The scans' cap is the subject, not their time limit: a grep of 6 MiB passed the default 5 s once on a loaded CI machine.
    SVC_DRIVE_GREP_TIMEOUT_MS: '60000',
  });
  const person = async (name: string) => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
  const [a, b] = await Promise.all([person('Ada'), person('Bob')]);
  [ada, adaAccount, bob] = [a.key, a.account.id, b.key];
}, 60_000);
afterAll(() => t?.stop());

interface Held {
  /** The answer, once the request is done. */
  answer: Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>;
  /** Sends the rest of the body. */
  finish(rest?: Buffer): void;
  /** Drops the connection. */
  abort(): void;
}

/** A request whose body is sent in part and held open until finish() or abort(). */
function held(method: string, p: string, headers: Record<string, string>, first: Buffer): Held {
  const r = http.request(t.url + p, { method, headers });
  const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    r.on('error', reject);
    r.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
  });
  answer.catch(() => undefined);
  r.flushHeaders();
  if (first.length) r.write(first);
  return { answer, finish: (rest) => r.end(rest), abort: () => r.destroy() };
}

/** The git processes this process (the stack) runs for the repository of profile `id`. */
function gitChildren(id: string): number {
  let n = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(id)) n++;
    } catch {
      // gone already
    }
  }
  return n;
}

const upload = (key: string, name: string, body: string) =>
  t.call('POST', `/v1/drive/upload?name=${name}`, { key, body, headers: { 'content-type': 'application/octet-stream' } });

describe('uploads', () => {
  test("an account's uploads in progress are capped; one more is refused with 429, the other account uploads on", async () => {
    const half = Buffer.alloc(1000, 'a');
    const holding = [1, 2].map((i) =>
      held(
        'POST',
        `/v1/drive/upload?name=held-${i}.txt`,
        { authorization: `Bearer ${ada}`, 'content-type': 'application/octet-stream', 'content-length': '2000' },
        half,
      ),
    );
    // Both have their slots once the drive has begun both (a slot is taken before the upload begins).
    const sql = await t.stack.backends.sql();
    await until(
      async () => (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM drive.uploads WHERE account_id = $1', [adaAccount]))[0]!.n === 2,
      15_000,
      { what: "Ada's two uploads to begin" },
    );
    const refused = await upload(ada, 'third.txt', 'p');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error).toEqual({
      code: 'concurrency_limit',
      message: expect.stringMatching(/an account may have 2 in progress \(limit uploads\)/),
      requestId: expect.any(String),
      details: { limit: 'uploads', scope: 'account', max: 2 },
    });
    // Bob is not held up by Ada's uploads.
    const bobs = await upload(bob, 'bobs.txt', 'bob');
    expect([bobs.status, bobs.body.size]).toEqual([201, 3]);
    // Ada's held uploads complete, and her slots are free again.
    for (const h of holding) h.finish(half);
    const done = await Promise.all(holding.map((h) => h.answer));
    expect(done.map((d) => [d.status, JSON.parse(d.body).size])).toEqual([
      [201, 2000],
      [201, 2000],
    ]);
    expect((await upload(ada, 'after.txt', 'after')).status).toBe(201);
  }, 60_000);
});

describe('drive scans', () => {
  test("an account's greps past its cap are refused with 429 naming the limit, while the other account's grep is served", async () => {
    // Enough text that a grep reads for a while: 24 files of 256 KiB each, without the pattern.
    const line = `${'lorem ipsum dolor sit amet '.repeat(3)}\n`;
    const content = line.repeat(Math.ceil((256 * 1024) / line.length));
    for (let i = 0; i < 24; i++) expect((await upload(ada, `text-${i}.txt`, content)).status).toBe(201);
    expect((await upload(bob, 'bob.txt', 'a needle here\n')).status).toBe(201);

    const grep = (key: string, pattern: string) => t.call('GET', `/v1/drive/grep?pattern=${pattern}`, { key });
    let refusal: Awaited<ReturnType<typeof grep>> | undefined;
    // Eight at once against one slot: some overlap (a few rounds at most, on a loaded machine).
    for (let round = 0; round < 5 && !refusal; round++) {
      const [bobs, ...adas] = await Promise.all([grep(bob, 'needle'), ...Array.from({ length: 8 }, () => grep(ada, 'needle'))]);
      expect(bobs.status).toBe(200);
      expect(bobs.body.matches).toEqual([expect.objectContaining({ path: 'bob.txt', line: 1, column: 3 })]);
      for (const r of adas) expect([200, 429]).toContain(r.status);
      expect(adas.some((r) => r.status === 200)).toBe(true);
      for (const r of adas) if (r.status === 200) expect(r.body).toMatchObject({ matches: [], filesSearched: expect.any(Number) });
      refusal = adas.find((r) => r.status === 429);
    }
    expect(refusal).toBeDefined();
    expect(refusal!.headers.get('retry-after')).toBe('1');
    expect(refusal!.body.error).toMatchObject({
      code: 'concurrency_limit',
      message: expect.stringMatching(/drive scans .*an account may have 1 in progress \(limit drive_scans\)/),
      details: { limit: 'drive_scans', scope: 'account', max: 1 },
    });
    // Alone again, Ada's grep runs.
    expect((await grep(ada, 'lorem')).status).toBe(200);
  }, 120_000);
});

describe('Git', () => {
  withGit.test(
    "an account's Git requests in progress are capped; one more is 429 with Retry-After, the other account's are served",
    async () => {
      const profile = async (key: string) => (await t.ok('POST', '/profiles', key, { name: 'Warm light' })).body.id as string;
      const [adas, bobs] = await Promise.all([profile(ada), profile(bob)]);
      const basic = (key: string) => `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`;
      const refs = (key: string, id: string) =>
        fetch(`${t.url}/git/profiles/${id}.git/info/refs?service=git-upload-pack`, { headers: { authorization: basic(key) } });
      // Two upload-packs whose requests never end: git waits for them, holding Ada's two slots.
      const holding = [1, 2].map(() =>
        held(
          'POST',
          `/git/profiles/${adas}.git/git-upload-pack`,
          { authorization: basic(ada), 'content-type': 'application/x-git-upload-pack-request', 'transfer-encoding': 'chunked' },
          Buffer.alloc(0),
        ),
      );
      // Both have their slots once git runs for both (a slot is taken before the repository is brought up to date).
      await until(() => gitChildren(adas) === 2, 15_000, { what: 'two git upload-packs to run' });
      const refused = await refs(ada, adas);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.text()).toMatch(/Git requests .*an account may have 2 in progress \(limit git_builds\)/);
      const served = await refs(bob, bobs);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
      await served.arrayBuffer();
      // The held requests end (the client went away): Ada is served again.
      for (const h of holding) h.abort();
      await until(async () => (await refs(ada, adas)).status === 200, 15_000, { what: "Ada's slots to be given back" });
    },
    60_000,
  );
});
