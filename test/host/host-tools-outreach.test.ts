/**
 * The host's outreach tools (docs/host.md): contacts through sequences of mails with due dates,
 * sent over SMTP to a local server (smtp-server on loopback), journaled before each mail goes.
 * And the project tools' verbs: a host without them is refused, naming the verb.
 */
import fs from 'node:fs';
import path from 'node:path';

import { SMTPServer } from 'smtp-server';

import { createLog, startHost } from '@svc/host';

import { tempDir } from '../support/backends';
import { control } from '../support/host';
import { sampleProject } from '../support/project';
import { startTestStack, type TestStack } from '../support/stack';

let t: TestStack;
let credential: string;
let project: string;
let adaId: string;
let adaKey: string;

beforeAll(async () => {
  t = await startTestStack();
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'outreach person' });
  const ada = { id: res.body.account.id, key: res.body.key };
  adaId = ada.id;
  adaKey = ada.key;
  const paired = await t.ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'outreach machine' });
  credential = paired.body.credential;
  await t.ok('POST', `/accounts/${ada.id}/standing-grants`, ada.key, {
    granteeId: paired.body.host.id,
    verbs: ['outreach.*'],
    scope: `host:${paired.body.host.id}`,
  });
  project = sampleProject();
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

describe('grants', () => {
  test('each tool needs its verb: a host without project grants is refused, naming the verb', async () => {
    const other = await t.ok('POST', `/accounts/${adaId}/hosts`, adaKey, { name: 'bare machine' });
    const bare = await startHost({
      credential: other.body.credential,
      baseUrl: t.url,
      port: 0,
      dataDir: tempDir(),
      units: new Map(),
      log: createLog({ silent: true }),
      connect: false,
      project,
    });
    try {
      await bare.grants.refresh();
      for (const [tool, verb, args] of [
        ['get_world', 'project.read', { world: 'bench' }],
        ['save_world', 'project.write', { world: 'x', document: {} }],
        ['read_file', 'files.read', { path: 'notes.txt' }],
        ['write_file', 'files.write', { path: 'x', content: '' }],
        ['graph_search', 'files.read', { query: 'x' }],
        ['evaluate_code', 'code.run', { code: '1' }],
        ['sim_trials', 'sim.run', { world: 'bench', trials: 1, seed: 1 }],
        ['market_order', 'market.trade', { symbol: 'BTC/USD', side: 'buy', type: 'market', qty: '1' }],
        ['host_call', 'peers.call', { hostId: 'host_other', tool: 'list_units' }],
        ['outreach_status', 'outreach.read', {}],
      ] as const) {
        const r = await control(bare.endpoint.port, other.body.credential, tool, args);
        expect([tool, r.status, r.body.error.code]).toEqual([tool, 403, 'grant_required']);
        expect(r.body.error.message).toContain(verb);
      }
    } finally {
      await bare.stop();
    }
  });
});

describe('outreach', () => {
  test('contacts through a sequence: due dates, mail over SMTP journaled first, at most once per step, replies and outcomes', async () => {
    // A local SMTP server on loopback; it refuses one recipient.
    const received: Array<{ to: string[]; text: string; journaled: boolean }> = [];
    let outreachData = '';
    const smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(addr, _session, cb) {
        cb(addr.address === 'refuse@example.com' ? Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }) : undefined);
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const last = fs
            .readFileSync(path.join(outreachData, 'journal.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
            .at(-1);
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            text: Buffer.concat(chunks).toString('utf8'),
            journaled: last.kind === 'action' && last.tool === 'outreach_send',
          });
          cb();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
    const smtpPort = (smtp.server.address() as { port: number }).port;
    fs.mkdirSync(path.join(project, 'outreach'), { recursive: true });
    fs.writeFileSync(
      path.join(project, 'outreach/sequences.json'),
      JSON.stringify({
        sequences: [
          {
            id: 'intro',
            name: 'Introduction',
            steps: [
              { subject: 'Hello {{name}}', body: 'A bench for {{fields.company}}.' },
              { subject: 'Following up', body: 'Any thoughts, {{name}}?', waitDays: 2 },
              { subject: 'Last note', body: 'Closing the loop.', waitDays: 5 },
            ],
          },
        ],
      }),
    );
    // A host without an SMTP server says so.
    const plain = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir: tempDir(),
      units: new Map(),
      log: createLog({ silent: true }),
      connect: false,
      project,
    });
    try {
      await plain.grants.refresh();
      const local = { via: 'local' as const };
      expect(((await plain.control.call('outreach_apps', {}, local)) as any).channels).toEqual([
        { id: 'email', transport: 'smtp', configured: false, from: null, server: null },
      ]);
      await expect(plain.control.call('outreach_send', { enrollment: 'en_x' }, local)).rejects.toMatchObject({ code: 'smtp_not_configured' });
    } finally {
      await plain.stop();
    }
    outreachData = tempDir();
    const mailing = await startHost({
      credential,
      baseUrl: t.url,
      port: 0,
      dataDir: outreachData,
      units: new Map(),
      log: createLog({ silent: true }),
      connect: false,
      project,
      smtp: { url: `smtp://127.0.0.1:${smtpPort}`, from: 'Ada <ada@lab.example>' },
    });
    const use = async (tool: string, args: object = {}) => {
      const r = await control(mailing.endpoint.port, credential, tool, args);
      return r.status === 200 ? r.body.result : { status: r.status, error: r.body.error };
    };
    try {
      await mailing.grants.refresh();
      expect(await use('outreach_apps')).toEqual({
        channels: [{ id: 'email', transport: 'smtp', configured: true, from: 'Ada <ada@lab.example>', server: `smtp://127.0.0.1:${smtpPort}` }],
        sequences: [{ id: 'intro', name: 'Introduction', steps: 3 }],
      });
      const bob = await use('outreach_identify', { email: 'Bob@Example.com', name: 'Bob', fields: { company: 'Acme' } });
      expect(bob).toMatchObject({ created: true, contact: { email: 'bob@example.com', name: 'Bob' } });
      expect(await use('outreach_identify', { email: 'bob@example.com', fields: { role: 'CTO' } })).toMatchObject({
        created: false,
        contact: { id: bob.contact.id, name: 'Bob', fields: { company: 'Acme', role: 'CTO' } },
      });
      expect((await use('outreach_identify', { email: 'not an address' })).status).toBe(400);
      const { enrollment } = await use('outreach_start', { contact: 'bob@example.com', sequence: 'intro' });
      expect(enrollment).toMatchObject({ status: 'active', step: 0 });
      expect((await use('outreach_start', { contact: bob.contact.id, sequence: 'intro' })).error.code).toBe('already_enrolled');
      expect((await use('outreach_start', { contact: bob.contact.id, sequence: 'nope' })).error.code).toBe('not_found');
      expect((await use('outreach_due')).due).toEqual([expect.objectContaining({ id: enrollment.id, contact: 'bob@example.com', step: 0 })]);

      // Step 1 goes out over SMTP; the journal had the action when the server got the mail.
      const sent = await use('outreach_send', { enrollment: enrollment.id });
      expect(sent.sent).toMatchObject({ step: 0, to: 'bob@example.com', subject: 'Hello Bob', messageId: expect.any(String) });
      expect(sent.enrollment).toMatchObject({ step: 1, status: 'active' });
      expect(received).toHaveLength(1);
      expect(received[0]).toMatchObject({ to: ['bob@example.com'], journaled: true });
      expect(received[0]!.text).toMatch(/Subject: Hello Bob/);
      expect(received[0]!.text).toMatch(/A bench for Acme\./);
      // Step 2 is due in two days: not now, but it shows when looking ahead, and early sends it.
      expect((await use('outreach_send', { enrollment: enrollment.id })).error.code).toBe('not_due');
      expect((await use('outreach_due')).due).toEqual([]);
      const later = new Date(Date.now() + 2.5 * 86_400_000).toISOString();
      expect((await use('outreach_due', { at: later })).due.map((d: any) => [d.id, d.step])).toEqual([[enrollment.id, 1]]);
      expect((await use('outreach_send', { enrollment: enrollment.id, early: true })).sent.subject).toBe('Following up');
      expect(received).toHaveLength(2);
      // Bob replies: nothing more is sent.
      expect((await use('outreach_reply', { enrollment: enrollment.id, text: 'Sounds good' })).enrollment.status).toBe('replied');
      expect((await use('outreach_send', { enrollment: enrollment.id, early: true })).error.code).toBe('not_active');
      expect((await use('outreach_outcome', { enrollment: enrollment.id, outcome: 'meeting', note: 'Tuesday' })).enrollment).toMatchObject({
        status: 'closed',
        outcome: { value: 'meeting', note: 'Tuesday' },
      });

      // A refused recipient: the send fails, is journaled as failed, and the step can be tried again.
      await use('outreach_identify', { email: 'refuse@example.com', name: 'Ref', fields: { company: 'Nope' } });
      const ref = (await use('outreach_start', { contact: 'refuse@example.com', sequence: 'intro' })).enrollment;
      const failed = await use('outreach_send', { enrollment: ref.id });
      expect([failed.status, failed.error.code]).toEqual([502, 'send_failed']);
      expect((await use('outreach_status', { enrollment: ref.id })).enrollment).toMatchObject({ step: 0, sending: null, status: 'active' });
      // Skipping moves past a step without sending; a template field the contact lacks refuses the send.
      expect((await use('outreach_advance', { enrollment: ref.id })).enrollment.step).toBe(1);
      await use('outreach_identify', { email: 'carol@example.com' });
      const carol = (await use('outreach_start', { contact: 'carol@example.com', sequence: 'intro' })).enrollment;
      expect((await use('outreach_send', { enrollment: carol.id })).error.code).toBe('template_missing_field');
      expect(received).toHaveLength(2);

      // A send in doubt (the host died between journaling and the answer) is never repeated by itself.
      const store = path.join(project, '.svc', 'outreach.json');
      const doc = JSON.parse(fs.readFileSync(store, 'utf8'));
      doc.enrollments[carol.id].sending = { step: 0, since: new Date().toISOString() };
      fs.writeFileSync(store, JSON.stringify(doc));
      expect((await use('outreach_send', { enrollment: carol.id })).error.code).toBe('send_in_doubt');
      expect((await use('outreach_due')).due.find((d: any) => d.id === carol.id)).toMatchObject({ inDoubt: true });
      expect((await use('outreach_advance', { enrollment: carol.id })).enrollment).toMatchObject({ step: 1, sending: null });

      expect(await use('outreach_status')).toEqual({
        contacts: 3,
        enrollments: 3,
        byStatus: { active: 2, finished: 0, replied: 0, closed: 1 },
        bySequence: { intro: 3 },
        outcomes: { meeting: 1 },
        sent: 2,
      });
      expect(fs.statSync(store).mode & 0o777).toBe(0o600);
      const entries = fs
        .readFileSync(path.join(outreachData, 'journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(entries.filter((e) => e.tool === 'outreach_send').map((e) => [e.kind, e.ok ?? null, e.error?.code ?? null])).toEqual([
        ['action', null, null],
        ['result', true, null],
        ['refused', false, 'not_due'],
        ['action', null, null],
        ['result', true, null],
        ['refused', false, 'not_active'],
        ['action', null, null],
        ['result', false, 'send_failed'],
        ['refused', false, 'template_missing_field'],
        ['refused', false, 'send_in_doubt'],
      ]);
    } finally {
      await mailing.stop();
      await new Promise<void>((r) => smtp.close(() => r()));
      fs.rmSync(path.join(project, 'outreach'), { recursive: true });
    }
  });
});
