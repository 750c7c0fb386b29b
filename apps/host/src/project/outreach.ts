import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { z } from 'zod';

import { ControlError } from '../units/units.js';
import { KeyedLock, writeAtomic } from './paths.js';
import type { Project } from './project.js';
import { issues } from './world.js';

/** A sequence the project defines (`outreach/sequences.json`): steps sent one after another, each `waitDays` after the last. */
const Sequence = z
  .object({
    id: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/),
    name: z.string().min(1).max(200),
    steps: z
      .array(
        z
          .object({
            subject: z.string().min(1).max(300),
            body: z.string().min(1).max(20_000),
            /** Days after the previous step (after the start for the first); default 0 for the first, 3 after. */
            waitDays: z.number().min(0).max(365).optional(),
          })
          .strict(),
      )
      .min(1)
      .max(20),
  })
  .strict();
export type Sequence = z.infer<typeof Sequence>;
const SequencesFile = z.object({ sequences: z.array(Sequence).max(200) }).strict();

export const OUTCOMES = ['meeting', 'interested', 'not_interested', 'bounced', 'unsubscribed', 'other'] as const;

export interface Contact {
  id: string;
  email: string;
  name: string | null;
  fields: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export interface HistoryItem {
  at: string;
  kind: 'started' | 'sending' | 'sent' | 'send_failed' | 'skipped' | 'reply' | 'outcome';
  step?: number;
  messageId?: string;
  note?: string;
}

/** A contact going through a sequence. `active`: step `step` is due at `dueAt`; then `finished` (every step done), `replied`, `closed` (an outcome). */
export interface Enrollment {
  id: string;
  contactId: string;
  sequenceId: string;
  status: 'active' | 'finished' | 'replied' | 'closed';
  step: number;
  dueAt: string | null;
  /** A step whose mail was being sent when it was last written (the host died mid-send?): never resent by itself. */
  sending: { step: number; since: string } | null;
  outcome: { value: (typeof OUTCOMES)[number]; note: string | null; at: string } | null;
  startedAt: string;
  history: HistoryItem[];
}

interface Store {
  contacts: Record<string, Contact>;
  enrollments: Record<string, Enrollment>;
}

const DAY = 86_400_000;
const emailRe = /^[^\s@<>()",;:]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,}$/;

/** What sends a step's mail (SMTP through nodemailer in the host; anything in tests). */
export type Mailer = (mail: { to: string; subject: string; text: string }) => Promise<{ messageId: string }>;

/**
 * The outreach engine: contacts, sequences (from the project), enrollments with their due dates,
 * stored in `.svc/outreach.json` of the project (written atomically; every change under one lock).
 */
export class Outreach {
  private readonly lock = new KeyedLock();

  constructor(
    private readonly project: Project,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get file(): string {
    return path.join(this.project.dataDir, 'outreach.json');
  }

  private async load(): Promise<Store> {
    try {
      return JSON.parse(await fs.promises.readFile(this.file, 'utf8')) as Store;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contacts: {}, enrollments: {} };
      throw err;
    }
  }

  /** Loads, changes and saves the store under the lock. */
  private change<T>(fn: (s: Store) => T | Promise<T>): Promise<T> {
    return this.lock.run('store', async () => {
      const s = await this.load();
      const out = await fn(s);
      await fs.promises.mkdir(this.project.dataDir, { recursive: true, mode: 0o700 });
      await writeAtomic(this.file, JSON.stringify(s, null, 1) + '\n', 0o600);
      return out;
    });
  }

  async sequences(): Promise<Map<string, Sequence>> {
    let text: string;
    try {
      text = (await this.project.readFile('outreach/sequences.json')).content;
    } catch (err) {
      if (err instanceof ControlError && err.code === 'not_found') return new Map();
      throw err;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new ControlError('invalid_sequences', `outreach/sequences.json is not JSON: ${(err as Error).message}`, 422);
    }
    const parsed = SequencesFile.safeParse(doc);
    if (!parsed.success) throw new ControlError('invalid_sequences', `outreach/sequences.json is not valid: ${issues(parsed.error).join('; ')}`, 422);
    return new Map(parsed.data.sequences.map((s) => [s.id, s]));
  }

  private async sequence(id: string): Promise<Sequence> {
    const s = (await this.sequences()).get(id);
    if (!s) throw new ControlError('not_found', `There is no sequence ${id} in outreach/sequences.json.`, 404);
    return s;
  }

  private static enrollment(s: Store, id: string): Enrollment {
    const e = s.enrollments[id];
    if (!e) throw new ControlError('not_found', `There is no enrollment ${id}.`, 404);
    return e;
  }

  private static contact(s: Store, ref: string): Contact {
    const c = s.contacts[ref] ?? Object.values(s.contacts).find((x) => x.email === ref.toLowerCase());
    if (!c) throw new ControlError('not_found', `There is no contact ${ref} (outreach_identify makes one).`, 404);
    return c;
  }

  private dueAfter(seq: Sequence, step: number, from: Date): string | null {
    if (step >= seq.steps.length) return null;
    const wait = seq.steps[step]!.waitDays ?? (step === 0 ? 0 : 3);
    return new Date(from.getTime() + wait * DAY).toISOString();
  }

  /** Makes or updates a contact by email (ids are derived from the address: identifying twice is one contact). */
  identify(email: string, name?: string, fields?: Record<string, string>) {
    const addr = email.trim().toLowerCase();
    if (!emailRe.test(addr)) throw new ControlError('invalid_arguments', `email: ${JSON.stringify(email)} is not an email address`, 400);
    for (const [k, v] of Object.entries(fields ?? {}))
      if (typeof v !== 'string') throw new ControlError('invalid_arguments', `fields.${k}: must be a string`, 400);
    const id = 'ct_' + createHash('sha256').update(addr).digest('hex').slice(0, 16);
    return this.change((s) => {
      const at = this.now().toISOString();
      const known = s.contacts[id];
      const contact: Contact = known
        ? { ...known, name: name ?? known.name, fields: { ...known.fields, ...fields }, updatedAt: at }
        : { id, email: addr, name: name ?? null, fields: fields ?? {}, createdAt: at, updatedAt: at };
      s.contacts[id] = contact;
      return { contact, created: !known };
    });
  }

  async start(contactRef: string, sequenceId: string) {
    const seq = await this.sequence(sequenceId);
    return this.change((s) => {
      const contact = Outreach.contact(s, contactRef);
      const running = Object.values(s.enrollments).find((e) => e.contactId === contact.id && e.sequenceId === seq.id && e.status === 'active');
      if (running) throw new ControlError('already_enrolled', `${contact.email} is already in ${seq.id} (${running.id}).`, 409);
      const now = this.now();
      const e: Enrollment = {
        id: 'en_' + randomBytes(8).toString('hex'),
        contactId: contact.id,
        sequenceId: seq.id,
        status: 'active',
        step: 0,
        dueAt: this.dueAfter(seq, 0, now),
        sending: null,
        outcome: null,
        startedAt: now.toISOString(),
        history: [{ at: now.toISOString(), kind: 'started' }],
      };
      s.enrollments[e.id] = e;
      return e;
    });
  }

  /**
   * Sends the enrollment's current step: `journal` is called (and awaited) before the mail goes,
   * the step is marked `sending` in the store, the mail is sent, then the step is recorded and the
   * next one scheduled. A step left `sending` (the host died mid-send) is not sent again: at most
   * once; outreach_advance moves past it.
   */
  async send(id: string, mailer: Mailer, journal: (what: { to: string; step: number; subject: string }) => Promise<void>, early = false) {
    const prepared = await this.change(async (s) => {
      const e = Outreach.enrollment(s, id);
      if (e.status !== 'active') throw new ControlError('not_active', `The enrollment ${id} is ${e.status}; nothing to send.`, 409);
      if (e.sending)
        throw new ControlError(
          'send_in_doubt',
          `Step ${e.sending.step + 1} of ${id} was being sent at ${e.sending.since} and its outcome is unknown; it is not sent twice (outreach_advance moves past it).`,
          409,
        );
      if (!early && e.dueAt && Date.parse(e.dueAt) > this.now().getTime())
        throw new ControlError('not_due', `Step ${e.step + 1} of ${id} is due at ${e.dueAt} (early: true sends it now).`, 409);
      const seq = await this.sequence(e.sequenceId);
      const contact = s.contacts[e.contactId]!;
      const step = seq.steps[e.step]!;
      const mail = { to: contact.email, subject: fill(step.subject, contact), text: fill(step.body, contact) };
      await journal({ to: contact.email, step: e.step, subject: mail.subject });
      const at = this.now().toISOString();
      e.sending = { step: e.step, since: at };
      e.history.push({ at, kind: 'sending', step: e.step });
      return { mail, step: e.step, seq };
    });
    let messageId: string;
    try {
      ({ messageId } = await mailer(prepared.mail));
    } catch (err) {
      await this.change((s) => {
        const e = Outreach.enrollment(s, id);
        e.sending = null;
        e.history.push({ at: this.now().toISOString(), kind: 'send_failed', step: prepared.step, note: (err as Error).message.slice(0, 300) });
      });
      throw new ControlError('send_failed', `The mail could not be sent: ${(err as Error).message}`, 502);
    }
    return this.change((s) => {
      const e = Outreach.enrollment(s, id);
      const now = this.now();
      e.sending = null;
      e.history.push({ at: now.toISOString(), kind: 'sent', step: prepared.step, messageId });
      this.moveOn(e, prepared.seq, now);
      return { enrollment: e, sent: { step: prepared.step, to: prepared.mail.to, subject: prepared.mail.subject, messageId } };
    });
  }

  private moveOn(e: Enrollment, seq: Sequence, now: Date): void {
    e.step++;
    e.dueAt = this.dueAfter(seq, e.step, now);
    if (e.step >= seq.steps.length) e.status = 'finished';
  }

  /** Moves past the current step without sending it (a step in doubt included). */
  async advance(id: string) {
    return this.change(async (s) => {
      const e = Outreach.enrollment(s, id);
      if (e.status !== 'active') throw new ControlError('not_active', `The enrollment ${id} is ${e.status}.`, 409);
      const now = this.now();
      e.history.push({ at: now.toISOString(), kind: 'skipped', step: e.step, note: e.sending ? 'was in doubt' : undefined });
      e.sending = null;
      this.moveOn(e, await this.sequence(e.sequenceId), now);
      return e;
    });
  }

  /** The contact answered: no further step is sent. */
  reply(id: string, text?: string) {
    return this.change((s) => {
      const e = Outreach.enrollment(s, id);
      if (e.status === 'closed') throw new ControlError('not_active', `The enrollment ${id} is closed.`, 409);
      e.status = 'replied';
      e.dueAt = null;
      e.history.push({ at: this.now().toISOString(), kind: 'reply', note: text?.slice(0, 2000) });
      return e;
    });
  }

  outcome(id: string, value: (typeof OUTCOMES)[number], note?: string) {
    return this.change((s) => {
      const e = Outreach.enrollment(s, id);
      const at = this.now().toISOString();
      e.status = 'closed';
      e.dueAt = null;
      e.outcome = { value, note: note ?? null, at };
      e.history.push({ at, kind: 'outcome', note: value });
      return e;
    });
  }

  /** Active enrollments whose step is due at `at` (default now), earliest first. */
  async due(at?: Date) {
    const s = await this.load();
    const when = (at ?? this.now()).getTime();
    const out = Object.values(s.enrollments)
      .filter((e) => e.status === 'active' && e.dueAt !== null && Date.parse(e.dueAt) <= when)
      .sort((a, b) => a.dueAt!.localeCompare(b.dueAt!));
    return out.map((e) => ({
      id: e.id,
      contact: s.contacts[e.contactId]?.email,
      sequence: e.sequenceId,
      step: e.step,
      dueAt: e.dueAt,
      inDoubt: !!e.sending,
    }));
  }

  async status(id?: string) {
    const s = await this.load();
    if (id) {
      const e = Outreach.enrollment(s, id);
      return { enrollment: e, contact: s.contacts[e.contactId] };
    }
    const all = Object.values(s.enrollments);
    const count = (f: (e: Enrollment) => boolean) => all.filter(f).length;
    return {
      contacts: Object.keys(s.contacts).length,
      enrollments: all.length,
      byStatus: Object.fromEntries(['active', 'finished', 'replied', 'closed'].map((k) => [k, count((e) => e.status === k)])),
      bySequence: Object.fromEntries([...new Set(all.map((e) => e.sequenceId))].map((q) => [q, count((e) => e.sequenceId === q)])),
      outcomes: Object.fromEntries(OUTCOMES.map((o) => [o, count((e) => e.outcome?.value === o)]).filter(([, n]) => n)),
      sent: all.reduce((n, e) => n + e.history.filter((h) => h.kind === 'sent').length, 0),
    };
  }
}

/** `{{name}}`, `{{email}}`, `{{fields.x}}` from the contact; a placeholder with nothing to fill refuses the send. */
function fill(template: string, c: Contact): string {
  return template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_m, key: string) => {
    const v = key === 'name' ? c.name : key === 'email' ? c.email : key.startsWith('fields.') ? c.fields[key.slice(7)] : undefined;
    if (v === undefined || v === null)
      throw new ControlError('template_missing_field', `The step uses {{${key}}}, which ${c.email} has no value for.`, 422);
    return v;
  });
}
