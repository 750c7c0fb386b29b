/** The `svc` command's commands: each takes the client, its positional arguments and flags, and writes its answer. */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { Svc } from '../client.js';
import type { Item } from '../types.js';
import { bytes, counted, type Out, table, UsageError } from './format.js';

export type Flags = Record<string, string | boolean | undefined>;
export type Command = (svc: Svc, args: string[], flags: Flags, out: Out) => Promise<void>;

const str = (flags: Flags, name: string): string | undefined => {
  const v = flags[name];
  if (v === true) throw new UsageError(`--${name} needs a value`);
  return v === false ? undefined : v;
};
const need = (args: string[], i: number, what: string): string => {
  const v = args[i];
  if (v === undefined) throw new UsageError(`missing ${what}`);
  return v;
};
const print = (out: Out, value: unknown, human: () => string) => out.stdout(out.json ? JSON.stringify(value, null, 2) + '\n' : human());

const keys: Record<string, Command> = {
  async create(svc, _args, flags, out) {
    const k = await svc.keys.create({ name: str(flags, 'name') ?? 'svc command' });
    print(out, k, () => `${k.key}\n`);
    if (!out.json) out.stderr(`Created ${k.id} (${k.prefix}…): the key is shown once.\n`);
  },
  async list(svc, _args, _flags, out) {
    const items: Array<Record<string, unknown>> = [];
    for await (const k of svc.meApiKeys.list.all()) items.push(k as Record<string, unknown>);
    print(out, { keys: items }, () => table(items, ['id', 'prefix', 'name', 'createdAt', 'lastUsedAt']));
  },
  async revoke(svc, args, _flags, out) {
    const res = await svc.keys.revoke({ keyId: need(args, 0, 'key id') });
    print(out, res, () => `Revoked ${args[0]}\n`);
  },
};
keys.ls = keys.list!;

const drive: Record<string, Command> = {
  async ls(svc, args, flags, out) {
    const items: Array<Item<'drive.list'>> = [];
    for await (const i of svc.drive.list.all({ parentId: args[0], projectId: str(flags, 'project') })) items.push(i);
    print(out, { items }, () =>
      table(
        items.map((i) => ({ ...i, size: i.kind === 'folder' ? '-' : bytes(i.size) })),
        ['id', 'kind', 'size', 'updatedAt', 'name'],
      ),
    );
  },
  async put(svc, args, flags, out) {
    const local = need(args, 0, 'local file');
    const size = fs.statSync(local).size;
    const name = str(flags, 'name') ?? path.basename(local);
    const content = counted(fs.createReadStream(local), `put ${name}`, size, out);
    const ifMatch = str(flags, 'if-match');
    const item = await svc.drive.upload({
      name,
      parentId: str(flags, 'parent'),
      projectId: str(flags, 'project'),
      content,
      contentType: str(flags, 'type'),
      ...(ifMatch ? { ifMatch } : flags.force ? {} : { ifNoneMatch: '*' }),
    });
    print(out, item, () => `${item.id}  ${bytes(item.size)}  ${item.etag}  ${item.name}\n`);
  },
  async get(svc, args, flags, out) {
    const id = need(args, 0, 'file id');
    const meta = await svc.drive.get({ id });
    const dest = args[1] ?? meta.name;
    const res = await svc.drive.read({ id });
    const source = counted(Readable.fromWeb(res.body as never), `get ${meta.name}`, res.contentLength, out);
    if (dest === '-') {
      for await (const chunk of source) out.stdout(Buffer.from(chunk) as unknown as string);
      return;
    }
    if (fs.existsSync(dest) && !flags.force) throw new UsageError(`${dest} exists (--force replaces it)`);
    await pipeline(Readable.from(source), fs.createWriteStream(dest));
    if (out.json) out.stdout(JSON.stringify({ ...meta, path: dest }, null, 2) + '\n');
    else out.stderr(`Wrote ${dest} (${bytes(meta.size)})\n`);
  },
  async mv(svc, args, flags, out) {
    const id = need(args, 0, 'item id');
    const name = str(flags, 'name') ?? args[1];
    const parent = str(flags, 'to');
    if (name === undefined && parent === undefined) throw new UsageError('give a new name or --to <folder id>');
    const item = await svc.drive.update({
      id,
      ...(name !== undefined ? { name } : {}),
      ...(parent !== undefined ? { parentId: parent === 'root' ? null : parent } : {}),
      ifMatch: str(flags, 'if-match'),
    } as never);
    print(out, item, () => `${item.id}  ${item.name}\n`);
  },
  async rm(svc, args, flags, out) {
    const res = await svc.drive.delete({ id: need(args, 0, 'item id'), ifMatch: str(flags, 'if-match') });
    print(out, res, () => `Deleted ${args[0]}\n`);
  },
  async mkdir(svc, args, flags, out) {
    const item = await svc.drive.createFolder({ name: need(args, 0, 'folder name'), parentId: str(flags, 'parent') });
    print(out, item, () => `${item.id}  ${item.name}\n`);
  },
};

const FINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** Follows a thread's events; with `untilIdle`, stops when the run in progress (or the next one) ends. */
async function follow(svc: Svc, id: string, after: number, untilIdle: boolean, out: Out): Promise<number> {
  let failed = false;
  let midLine = false;
  for await (const e of svc.threads.events.stream({ id, after })) {
    const ev = e.data;
    if (out.json) out.stdout(JSON.stringify(ev) + '\n');
    else if (e.event === 'message.delta') {
      out.stdout(String((ev.data as { text?: string }).text ?? ''));
      midLine = true;
    } else {
      if (midLine) out.stdout('\n');
      midLine = false;
      const d = ev.data as { role?: string; content?: string; name?: string; arguments?: unknown; args?: unknown };
      if (ev.type === 'message.created' && d.role === 'assistant') out.stdout(`assistant: ${d.content}\n`);
      else if (ev.type === 'message.created' || ev.type === 'message.injected') out.stdout(`${d.role ?? 'user'}: ${d.content}\n`);
      else if (ev.type === 'tool.called') out.stdout(`[${ev.seq}] tool.called ${d.name} ${JSON.stringify(d.arguments ?? d.args ?? {})}\n`);
      else out.stdout(`[${ev.seq}] ${ev.type}\n`);
    }
    if (untilIdle && FINAL.has(String(e.event))) {
      failed = e.event !== 'run.completed';
      break;
    }
  }
  return failed ? 1 : 0;
}

/** What `say --mode` takes: how a message meets a working run (docs/threads.md, "Messages while a run works"). */
const INJECT_MODES = ['boundary', 'interrupt', 'enqueue', 'reject', 'rollback'] as const;

const threads: Record<string, Command> = {
  async new(svc, args, flags, out) {
    const message = args.join(' ') || undefined;
    const t = await svc.threads.create({ agentId: str(flags, 'agent'), title: str(flags, 'title'), message });
    if (flags.wait && message) {
      if (!out.json) out.stderr(`Thread ${t.id}\n`);
      process.exitCode = await follow(svc, t.id, 0, true, out);
      return;
    }
    print(out, t, () => `${t.id}\n`);
  },
  async say(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    const content = args.slice(1).join(' ');
    if (!content) throw new UsageError('missing message');
    const mode = str(flags, 'mode');
    if (mode !== undefined && !(INJECT_MODES as readonly string[]).includes(mode)) {
      throw new UsageError(`--mode must be ${INJECT_MODES.slice(0, -1).join(', ')} or ${INJECT_MODES[INJECT_MODES.length - 1]}`);
    }
    const res = await svc.threads.inject({ id, content, ...(mode ? { mode: mode as (typeof INJECT_MODES)[number] } : {}) });
    if (flags.wait) {
      process.exitCode = await follow(svc, id, res.seq > 0 ? res.seq - 1 : 0, true, out);
      return;
    }
    print(out, res, () => `${res.messageId} ${res.status}${res.rolledBackRunId ? ` (rolled back ${res.rolledBackRunId})` : ''}\n`);
  },
  async tail(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    process.exitCode = await follow(svc, id, Number(str(flags, 'after') ?? 0), Boolean(flags['until-idle']), out);
  },
  async ls(svc, _args, _flags, out) {
    const res = await svc.threads.list({ limit: 50 });
    print(out, res, () => table(res.threads, ['id', 'status', 'agentId', 'lastActivityAt', 'title']));
  },
  /** The requests a thread's paused run waits on (all of the account's without a thread). */
  async approvals(svc, args, _flags, out) {
    const id = args[0];
    const res = id ? await svc.threads.approvals.list({ id, status: 'pending' }) : await svc.approvals.list({ status: 'pending' });
    print(out, res, () => table(res.approvals as Array<Record<string, unknown>>, ['id', 'threadId', 'kind', 'tool', 'arguments', 'expiresAt']));
  },
  async approve(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    const json = str(flags, 'args');
    let edited: Record<string, unknown> | undefined;
    if (json !== undefined) {
      try {
        edited = JSON.parse(json) as Record<string, unknown>;
      } catch {
        throw new UsageError('--args must be a JSON object');
      }
      if (!edited || typeof edited !== 'object' || Array.isArray(edited)) throw new UsageError('--args must be a JSON object');
    }
    const a = await svc.threads.approvals.approve({ id, approvalId: await pendingId(svc, id, args[1]), ...(edited ? { arguments: edited } : {}) });
    print(out, a, () => `Approved ${a.id} (${a.tool}${a.editedArguments ? ', edited arguments' : ''})\n`);
  },
  async reject(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    const reason = str(flags, 'reason');
    const a = await svc.threads.approvals.reject({ id, approvalId: await pendingId(svc, id, args[1]), ...(reason ? { reason } : {}) });
    print(out, a, () => `Rejected ${a.id} (${a.tool})\n`);
  },
  async fork(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    const at = str(flags, 'at');
    if (at !== undefined && !/^[1-9]\d{0,14}$/.test(at)) throw new UsageError('--at must be a seq (1, 2, 3…)');
    const t = await svc.threads.fork({ id, ...(at ? { atSeq: Number(at) } : {}), ...(str(flags, 'title') ? { title: str(flags, 'title') } : {}) });
    print(out, t, () => `${t.id}\n`);
  },
  /** Edits an earlier message of the person's: a new thread from just before it, with a run on the new text. */
  async edit(svc, args, flags, out) {
    const id = need(args, 0, 'thread id');
    const messageId = need(args, 1, 'message id');
    const content = args.slice(2).join(' ');
    if (!content) throw new UsageError('missing message');
    const title = str(flags, 'title');
    const res = await svc.threads.messages.edit({ id, messageId, content, ...(title ? { title } : {}) });
    if (flags.wait) {
      process.exitCode = await follow(svc, res.thread.id, 0, true, out);
      return;
    }
    print(out, res, () => `${res.thread.id} ${res.runId}\n`);
  },
};
threads.list = threads.ls!;

/** The approval named, or the thread's one pending approval (a usage error when there are none or several). */
async function pendingId(svc: Svc, threadId: string, given: string | undefined): Promise<string> {
  if (given) return given;
  const pending = (await svc.threads.approvals.list({ id: threadId, status: 'pending' })).approvals.filter((a) => a.kind === 'approval');
  if (pending.length === 1) return pending[0]!.id;
  throw new UsageError(
    pending.length
      ? `the thread has ${pending.length} pending approvals: name one (${pending.map((a) => a.id).join(', ')})`
      : 'the thread has no pending approval',
  );
}

const models: Record<string, Command> = {
  async ls(svc, _args, _flags, out) {
    const res = await svc.models.list();
    print(out, res, () => table(res.models as Array<Record<string, unknown>>, ['id', 'provider', 'available', 'name']));
  },
};
models.list = models.ls!;

const profiles: Record<string, Command> = {
  async log(svc, args, flags, out) {
    const res = await svc.profiles.log({ id: need(args, 0, 'profile id'), branchId: str(flags, 'branch') });
    print(out, res, () => table(res.versions, ['id', 'parentVersionId', 'createdAt', 'message']));
  },
  async diff(svc, args, _flags, out) {
    const res = await svc.profiles.diff({ id: need(args, 0, 'profile id'), from: need(args, 1, 'from version'), to: need(args, 2, 'to version') });
    print(out, res, () => {
      const rows = Object.entries(res as Record<string, unknown>)
        .filter(([, v]) => typeof v === 'object' && v !== null)
        .map(([section, v]) => {
          const count = (x: unknown) => (Array.isArray(x) ? x.length : typeof x === 'object' && x !== null ? Object.keys(x).length : 0);
          const d = v as Record<string, unknown>;
          return { section, added: count(d.added), removed: count(d.removed), changed: count(d.changed) };
        });
      return `${res.from ?? '-'} -> ${res.to ?? '-'}\n` + table(rows, ['section', 'added', 'removed', 'changed']);
    });
  },
};

const trading: Record<string, Command> = {
  async venues(svc, _args, _flags, out) {
    const res = await svc.trading.venues();
    print(out, res, () => table(res.venues as Array<Record<string, unknown>>, ['id', 'kind', 'name']));
  },
  async order(svc, _args, flags, out) {
    const side = str(flags, 'side');
    if (side !== 'buy' && side !== 'sell') throw new UsageError('--side buy|sell is required');
    const o = await svc.trading.order({
      venue: str(flags, 'venue'),
      symbol: str(flags, 'symbol') ?? '',
      side,
      type: (str(flags, 'type') ?? (flags.price ? 'limit' : 'market')) as never,
      ...(flags.notional !== undefined ? { notional: str(flags, 'notional') } : { qty: str(flags, 'qty') ?? '' }),
      price: str(flags, 'price'),
      stopPrice: str(flags, 'stop-price'),
      timeInForce: str(flags, 'tif') as never,
      clientOrderId: str(flags, 'client-order-id'),
      trailPrice: str(flags, 'trail-price'),
      trailPercent: str(flags, 'trail-percent'),
      // A linked order (docs/trading.md): its legs' prices.
      orderClass: str(flags, 'class') as never,
      takeProfit: flags['take-profit'] !== undefined ? { price: str(flags, 'take-profit')! } : undefined,
      stopLoss:
        flags['stop-loss'] !== undefined
          ? { stopPrice: str(flags, 'stop-loss')!, price: str(flags, 'stop-loss-limit') }
          : flags['stop-loss-trail'] !== undefined || flags['stop-loss-trail-percent'] !== undefined
            ? { trailPrice: str(flags, 'stop-loss-trail'), trailPercent: str(flags, 'stop-loss-trail-percent') }
            : undefined,
    });
    const rows = [o, ...((o as { legs?: unknown[] }).legs ?? [])] as Array<Record<string, unknown>>;
    print(out, o, () => table(rows, ['id', 'status', 'side', 'type', 'qty', 'price', 'stopPrice', 'symbol']));
  },
  /** The account's order updates after --after; with --follow, then the live ones (resumed across drops) until interrupted. */
  async events(svc, _args, flags, out) {
    const after = Number(str(flags, 'after') ?? 0);
    if (!Number.isInteger(after) || after < 0) throw new UsageError('--after must be a seq (0 or more)');
    const line = (e: {
      seq: number;
      type: string;
      order: { symbol: string; side: string; filledQty: string; qty: string; status: string } | null;
    }) =>
      e.order
        ? `[${e.seq}] ${e.type} ${e.order.side} ${e.order.filledQty}/${e.order.qty} ${e.order.symbol} ${e.order.status}\n`
        : `[${e.seq}] ${e.type}\n`;
    const show = (e: Parameters<typeof line>[0]) => out.stdout(out.json ? JSON.stringify(e) + '\n' : line(e));
    if (flags.follow) {
      for await (const e of svc.trading.events.stream({ after })) show(e.data);
      return;
    }
    for await (const e of svc.trading.events.all({ after })) show(e);
  },
  async cancel(svc, args, flags, out) {
    const res = await svc.trading.cancel({ orderId: need(args, 0, 'order id'), venue: str(flags, 'venue') } as never);
    print(out, res, () => table(res.orders as Array<Record<string, unknown>>, ['id', 'status', 'symbol']));
  },
};

export const COMMANDS: Record<string, Record<string, Command>> = { keys, drive, threads, models, profiles, trading };
