import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';

import { type Blobs, createFsBlobs } from '@svc/kit';

import { tempDir } from '../support/backends';

// The filesystem blob store is durable: a put returns once the data and the new name are on the
// disk (fdatasync of the file before it is renamed into place, fsync of the folder after), so a
// crash after a put can never leave a committed row pointing at an empty or cut file. A put that
// fails leaves nothing: no object and no temporary file.
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const MiB = 1024 * 1024;

/** Everything under `root` except the temporary folder, as relative paths. */
function files(root: string, dir = root): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(root, p));
    else out.push(path.relative(root, p));
  }
  return out;
}

const temporaries = (root: string) => fs.readdirSync(path.join(root, '.tmp'));

async function read(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A source of `total` bytes in chunks of `chunk` bytes that fails after `failAfter` bytes, if given. */
function source(bytes: Buffer, chunk: number, failAfter?: number): Readable {
  let off = 0;
  return new Readable({
    read() {
      if (failAfter !== undefined && off >= failAfter) return void this.destroy(new Error('the client went away'));
      if (off >= bytes.length) return void this.push(null);
      this.push(bytes.subarray(off, off + chunk));
      off += chunk;
    },
  });
}

/** Records the file system calls the store makes that matter for durability, in order. */
function recordSyncs() {
  const events: string[] = [];
  const fdPaths = new Map<number, string>();
  const realOpen = fs.promises.open;
  const open = jest.spyOn(fs.promises, 'open').mockImplementation(async (...args: Parameters<typeof fs.promises.open>) => {
    const fh = await realOpen(...args);
    fdPaths.set(fh.fd, String(args[0]));
    return fh;
  });
  const realRename = fs.promises.rename;
  const rename = jest.spyOn(fs.promises, 'rename').mockImplementation(async (from, to) => {
    events.push(`rename ${String(from)} -> ${String(to)}`);
    return realRename(from, to);
  });
  return {
    events,
    fdPaths,
    /** Wraps FileHandle's sync and datasync (FileHandle is not exported: its prototype is found through an open handle). */
    async wrapHandles(dir: string): Promise<() => void> {
      const probe = await realOpen(path.join(dir, 'probe'), 'w');
      const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void>; datasync: () => Promise<void> };
      await probe.close();
      fs.rmSync(path.join(dir, 'probe'));
      const realSync = proto.sync;
      const realDatasync = proto.datasync;
      const s = jest.spyOn(proto, 'sync').mockImplementation(async function (this: fs.promises.FileHandle) {
        events.push(`sync ${fdPaths.get(this.fd)}`);
        return realSync.call(this);
      });
      const d = jest.spyOn(proto, 'datasync').mockImplementation(async function (this: fs.promises.FileHandle) {
        events.push(`datasync ${fdPaths.get(this.fd)}`);
        return realDatasync.call(this);
      });
      return () => {
        s.mockRestore();
        d.mockRestore();
      };
    },
    restore() {
      open.mockRestore();
      rename.mockRestore();
    },
  };
}

describe('filesystem blobs are durable and all-or-nothing', () => {
  let root: string;
  let blobs: Blobs;
  beforeEach(() => {
    root = tempDir('svc-blobs-');
    blobs = createFsBlobs(root);
  });
  afterEach(() => {
    jest.restoreAllMocks();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('a streamed put stores the bytes exactly, in any chunking, and leaves no temporary file', async () => {
    const bytes = randomBytes(20 * MiB + 12345);
    for (const [i, chunk] of [1000, 64 * 1024, 256 * 1024 + 7, 3 * MiB].entries()) {
      const key = `drive/a/${i}/${sha(bytes)}`;
      expect(await blobs.put(key, source(bytes, chunk))).toEqual({ size: bytes.length });
      expect(sha(await read(await blobs.get(key)))).toBe(sha(bytes));
    }
    expect(temporaries(root)).toEqual([]);
  });

  test('a put flushes the data before the rename and the folders after it', async () => {
    const rec = recordSyncs();
    const unwrap = await rec.wrapHandles(root);
    try {
      const bytes = randomBytes(20 * MiB);
      await blobs.put('drive/acct/ab/new', source(bytes, 256 * 1024));
      const renameAt = rec.events.findIndex((e) => e.startsWith('rename '));
      expect(renameAt).toBeGreaterThan(0);
      const [, from] = /^rename (.*) -> /.exec(rec.events[renameAt]!)!;
      // The temporary file's data was flushed (in the background while it was written, then the
      // rest at the end) before the rename ...
      const dataSyncs = rec.events.slice(0, renameAt).filter((e) => e === `datasync ${from}`);
      expect(dataSyncs.length).toBeGreaterThanOrEqual(2);
      // ... and after it, the folder that holds the new name, and the parents of the folders the
      // put created (drive/, drive/acct/ and drive/acct/ab/ are new here).
      const after = rec.events.slice(renameAt + 1);
      for (const dir of ['drive/acct/ab', 'drive/acct', 'drive', '']) {
        expect(after).toContain(`sync ${path.join(root, dir)}`);
      }
      // A buffer put is flushed too.
      rec.events.length = 0;
      await blobs.put('drive/acct/ab/small', Buffer.from('hello'));
      const at = rec.events.findIndex((e) => e.startsWith('rename '));
      expect(rec.events.slice(0, at).some((e) => e.startsWith('datasync '))).toBe(true);
      expect(rec.events.slice(at + 1)).toContain(`sync ${path.join(root, 'drive/acct/ab')}`);
    } finally {
      unwrap();
      rec.restore();
    }
  });

  test('a move flushes the folder it lands in (and the parents of folders it made)', async () => {
    await blobs.put('drive-tmp/upl_1', Buffer.from('content'));
    const rec = recordSyncs();
    const unwrap = await rec.wrapHandles(root);
    try {
      await blobs.move('drive-tmp/upl_1', 'drive/acct/cd/target');
      const at = rec.events.findIndex((e) => e.startsWith('rename '));
      const after = rec.events.slice(at + 1);
      for (const dir of ['drive/acct/cd', 'drive/acct', 'drive', '']) expect(after).toContain(`sync ${path.join(root, dir)}`);
      expect((await read(await blobs.get('drive/acct/cd/target'))).toString()).toBe('content');
      expect(await blobs.stat('drive-tmp/upl_1')).toBeNull();
    } finally {
      unwrap();
      rec.restore();
    }
  });

  test('a staged put flushes its data but not its folder; the move after it flushes the folder it lands in', async () => {
    const rec = recordSyncs();
    const unwrap = await rec.wrapHandles(root);
    try {
      const bytes = randomBytes(3 * MiB);
      expect(await blobs.put('drive-tmp/upl_2', source(bytes, 256 * 1024), undefined, { staged: true })).toEqual({ size: bytes.length });
      const renameAt = rec.events.findIndex((e) => e.startsWith('rename '));
      const [, from] = /^rename (.*) -> /.exec(rec.events[renameAt]!)!;
      expect(rec.events.slice(0, renameAt)).toContain(`datasync ${from}`);
      // No folder flushed: the staged name is not what a commit relies on.
      expect(rec.events.filter((e) => e.startsWith('sync '))).toEqual([]);
      rec.events.length = 0;
      await blobs.move('drive-tmp/upl_2', 'drive/acct/ef/target');
      const at = rec.events.findIndex((e) => e.startsWith('rename '));
      expect(rec.events.slice(at + 1)).toContain(`sync ${path.join(root, 'drive/acct/ef')}`);
      expect(sha(await read(await blobs.get('drive/acct/ef/target')))).toBe(sha(bytes));
      // A failed staged put leaves nothing, as any put.
      await expect(blobs.put('drive-tmp/upl_3', source(bytes, 256 * 1024, MiB), undefined, { staged: true })).rejects.toThrow('the client went away');
      expect(await blobs.stat('drive-tmp/upl_3')).toBeNull();
      expect(temporaries(root)).toEqual([]);
    } finally {
      unwrap();
      rec.restore();
    }
  });

  test('a put whose source fails mid-stream leaves no object and no temporary file; the previous object stays', async () => {
    const before = randomBytes(1000);
    await blobs.put('drive/a/xy/key', before);
    const bytes = randomBytes(24 * MiB);
    // Past the first background flush (every 8 MiB), so a flush may be running when it fails.
    await expect(blobs.put('drive/a/xy/key', source(bytes, 256 * 1024, 17 * MiB))).rejects.toThrow(/went away/);
    await expect(blobs.put('drive/a/xy/other', source(bytes, 256 * 1024, 300 * 1024))).rejects.toThrow(/went away/);
    expect(await blobs.stat('drive/a/xy/other')).toBeNull();
    expect(sha(await read(await blobs.get('drive/a/xy/key')))).toBe(sha(before));
    expect(temporaries(root)).toEqual([]);
    expect(files(root).filter((f) => !f.startsWith('.tmp'))).toEqual(['drive/a/xy/key']);
  });

  test('a put whose flush fails (a disk error) fails, and leaves nothing', async () => {
    const probe = await fs.promises.open(path.join(root, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    fs.rmSync(path.join(root, 'probe'));
    const failing = jest.spyOn(proto, 'datasync').mockRejectedValue(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    try {
      await expect(blobs.put('drive/a/ef/big', source(randomBytes(20 * MiB), 256 * 1024))).rejects.toThrow(/EIO/);
      await expect(blobs.put('drive/a/ef/small', Buffer.from('x'))).rejects.toThrow(/EIO/);
      expect(failing).toHaveBeenCalled();
    } finally {
      failing.mockRestore();
    }
    expect(await blobs.stat('drive/a/ef/big')).toBeNull();
    expect(await blobs.stat('drive/a/ef/small')).toBeNull();
    expect(temporaries(root)).toEqual([]);
  });
});
