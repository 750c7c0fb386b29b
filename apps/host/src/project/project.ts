import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { ControlError } from '../units/units.js';
import { ProjectGraph } from './graph.js';
import { checkRelative, confine, KeyedLock, writeAtomic } from './paths.js';
import { type Device, DevicesFile, ID_RE, issues, World } from './world.js';

export const MAX_FILE_BYTES = 512 * 1024;

/** A document's version: a digest of its bytes (what get_world shows and save_world must be given back). */
export const versionOf = (bytes: Buffer | string) => 'v_' + createHash('sha256').update(bytes).digest('hex').slice(0, 20);

/**
 * The project folder this host serves. Layout:
 * `svc-project.json` (name, description; optional), `devices.json` (the devices), `worlds/<id>.json`
 * (the worlds), anything else (files the file tools read and write), `.svc/` (the host's data for
 * the project, not indexed).
 */
export class Project {
  readonly graph: ProjectGraph;
  private readonly locks = new KeyedLock();

  private constructor(readonly root: string) {
    this.graph = new ProjectGraph(root);
  }

  static async open(folder: string): Promise<Project> {
    let root: string;
    try {
      root = await fs.promises.realpath(folder);
    } catch {
      throw new ControlError('project_missing', `The project folder ${folder} does not exist.`, 500);
    }
    if (!(await fs.promises.stat(root)).isDirectory()) throw new ControlError('project_missing', `The project ${folder} is not a folder.`, 500);
    return new Project(root);
  }

  /** The project's data folder (`.svc/` inside it). */
  get dataDir(): string {
    return path.join(this.root, '.svc');
  }

  private async readJson(rel: string): Promise<{ bytes: Buffer; doc: unknown } | null> {
    let bytes: Buffer;
    try {
      const { real } = await confine(this.root, rel, true);
      bytes = await fs.promises.readFile(real!);
    } catch (err) {
      if (err instanceof ControlError && err.code === 'not_found') return null;
      throw err;
    }
    try {
      return { bytes, doc: JSON.parse(bytes.toString('utf8')) };
    } catch (err) {
      return { bytes, doc: new SyntaxError((err as Error).message) };
    }
  }

  async info() {
    const meta = await this.readJson('svc-project.json');
    const m = meta && !(meta.doc instanceof Error) ? (meta.doc as { name?: unknown; description?: unknown }) : {};
    const worlds = await this.worldIds();
    const devices = await this.devices().catch(() => new Map());
    await this.graph.refresh();
    return {
      name: typeof m.name === 'string' ? m.name : path.basename(this.root),
      description: typeof m.description === 'string' ? m.description : null,
      folder: path.basename(this.root),
      worlds: worlds.length,
      devices: devices.size,
      files: this.graph.stats().files,
    };
  }

  /** Every world and the devices file, each valid or with its problems; the index's size. */
  async status() {
    const worlds = [];
    let devices: Map<string, Device> | null = null;
    let devicesError: string[] | null = null;
    try {
      devices = await this.devices();
    } catch (err) {
      devicesError = (err as ControlError & { details?: string[] }).details ?? [(err as Error).message];
    }
    for (const id of await this.worldIds()) {
      try {
        const w = await this.world(id, devices ?? new Map());
        worlds.push({ id, version: w.version, valid: true });
      } catch (err) {
        const e = err as ControlError & { details?: string[]; version?: string };
        worlds.push({ id, version: e.version ?? null, valid: false, problems: e.details ?? [e.message] });
      }
    }
    await this.graph.refresh();
    return {
      devices: devicesError ? { valid: false, problems: devicesError } : { valid: true, count: devices!.size },
      worlds,
      index: this.graph.stats(),
    };
  }

  async worldIds(): Promise<string[]> {
    const { real } = await confine(this.root, 'worlds', false);
    if (!real) return [];
    const names = await fs.promises.readdir(real).catch(() => [] as string[]);
    return names
      .filter((n) => n.endsWith('.json') && ID_RE.test(n.slice(0, -5)))
      .map((n) => n.slice(0, -5))
      .sort();
  }

  async listWorlds() {
    const devices = await this.devices().catch(() => new Map<string, Device>());
    const out = [];
    for (const id of await this.worldIds()) {
      try {
        const w = await this.world(id, devices);
        out.push({
          id,
          name: w.world.name,
          version: w.version,
          devices: w.world.devices.length,
          parameters: Object.keys(w.world.parameters).length,
          valid: true,
        });
      } catch (err) {
        out.push({ id, valid: false, error: (err as Error).message });
      }
    }
    return out;
  }

  /** The devices of devices.json (none when there is no such file). */
  async devices(): Promise<Map<string, Device>> {
    const f = await this.readJson('devices.json');
    if (!f) return new Map();
    if (f.doc instanceof Error)
      throw withDetails(new ControlError('invalid_devices', `devices.json is not JSON: ${f.doc.message}`, 422), [f.doc.message]);
    const parsed = DevicesFile.safeParse(f.doc);
    if (!parsed.success)
      throw withDetails(
        new ControlError('invalid_devices', `devices.json is not valid: ${issues(parsed.error).join('; ')}`, 422),
        issues(parsed.error),
      );
    const out = new Map<string, Device>();
    for (const d of parsed.data.devices) {
      if (out.has(d.id)) throw new ControlError('invalid_devices', `devices.json names the device ${d.id} twice.`, 422);
      out.set(d.id, d);
    }
    return out;
  }

  async device(id: string) {
    const d = (await this.devices()).get(id);
    if (!d) throw new ControlError('not_found', `There is no device ${id} in devices.json.`, 404);
    const usedBy = [];
    for (const w of await this.worldIds()) {
      const doc = await this.world(w).catch(() => null);
      if (doc?.world.devices.some((p) => p.device === id)) usedBy.push(w);
    }
    return { device: d, worlds: usedBy };
  }

  private worldPath(id: string): string {
    if (!ID_RE.test(id)) throw new ControlError('invalid_arguments', 'world: an id (a letter, then letters, digits, _ or -)', 400);
    return `worlds/${id}.json`;
  }

  /** Checks a world document: the schema, unique device ids, devices that exist, parsable outputs. */
  check(doc: unknown, devices: Map<string, Device>): World {
    const parsed = World.safeParse(doc);
    if (!parsed.success)
      throw withDetails(new ControlError('invalid_world', `The world is not valid: ${issues(parsed.error).join('; ')}`, 422), issues(parsed.error));
    const w = parsed.data;
    const problems: string[] = [];
    const ids = new Set<string>();
    w.devices.forEach((d, i) => {
      if (ids.has(d.id)) problems.push(`devices.${i}.id: ${d.id} is used twice`);
      ids.add(d.id);
      if (!devices.has(d.device)) problems.push(`devices.${i}.device: there is no device ${d.device} in devices.json`);
    });
    for (const [name, p] of Object.entries(w.parameters)) {
      if (typeof p !== 'number' && p.min !== undefined && p.max !== undefined && p.min > p.max) problems.push(`parameters.${name}: min is above max`);
    }
    if (problems.length) throw withDetails(new ControlError('invalid_world', `The world is not valid: ${problems.join('; ')}`, 422), problems);
    return w;
  }

  async world(id: string, devices?: Map<string, Device>) {
    const f = await this.readJson(this.worldPath(id));
    if (!f) throw new ControlError('not_found', `There is no world ${id} (worlds/${id}.json).`, 404);
    const version = versionOf(f.bytes);
    if (f.doc instanceof Error)
      throw withDetails(new ControlError('invalid_world', `worlds/${id}.json is not JSON: ${f.doc.message}`, 422), [f.doc.message], version);
    try {
      return { id, version, world: this.check(f.doc, devices ?? (await this.devices())) };
    } catch (err) {
      (err as { version?: string }).version = version;
      throw err;
    }
  }

  /**
   * Saves a world: validated, then written atomically, only if the file is still at `version` (what
   * get_world gave; none: the world must not exist yet). Saves of one world are serialized, so of
   * two saves from the same version one wins and the other is a conflict.
   */
  async saveWorld(id: string, doc: unknown, version: string | undefined, beforeWrite: (next: string) => Promise<void>) {
    const rel = this.worldPath(id);
    const world = this.check(doc, await this.devices());
    const text = JSON.stringify(world, null, 2) + '\n';
    return this.locks.run(rel, async () => {
      const { abs, real } = await confine(this.root, rel, false);
      const current = real ? versionOf(await fs.promises.readFile(real)) : null;
      if (current !== (version ?? null)) {
        const why =
          current === null
            ? `the world ${id} does not exist (save without a version to create it)`
            : version === undefined
              ? `the world ${id} exists (at ${current}); pass its version to replace it`
              : `the world ${id} changed: it is at ${current}, not ${version}; read it again and merge`;
        throw Object.assign(new ControlError('version_conflict', `Not saved: ${why}.`, 409), { current });
      }
      const next = versionOf(text);
      await beforeWrite(next);
      await writeAtomic(real ?? abs, text);
      return { world: id, version: next, previous: current, created: current === null };
    });
  }

  async readFile(given: string, encoding: 'utf8' | 'base64' = 'utf8') {
    const rel = checkRelative(given);
    const { real } = await confine(this.root, rel, true);
    const st = await fs.promises.stat(real!);
    if (!st.isFile()) throw new ControlError('not_a_file', `${rel} is not a file.`, 400);
    if (st.size > MAX_FILE_BYTES)
      throw new ControlError('file_too_large', `${rel} is ${st.size} bytes; read_file reads at most ${MAX_FILE_BYTES}.`, 413);
    const bytes = await fs.promises.readFile(real!);
    return { path: rel, size: st.size, version: versionOf(bytes), encoding, content: bytes.toString(encoding) };
  }

  /** Writes a file of the project atomically; with `version`, only if it is still at that version. */
  async writeFile(
    given: string,
    content: string,
    encoding: 'utf8' | 'base64',
    version: string | undefined,
    beforeWrite: (rel: string) => Promise<void>,
  ) {
    const rel = checkRelative(given);
    if (rel === '.svc' || rel.startsWith('.svc/'))
      throw new ControlError('path_reserved', ".svc/ holds the host's data for the project; write_file does not write there.", 403);
    const bytes = Buffer.from(content, encoding);
    if (bytes.length > MAX_FILE_BYTES) throw new ControlError('file_too_large', `write_file writes at most ${MAX_FILE_BYTES} bytes.`, 413);
    return this.locks.run(rel, async () => {
      const { abs, real } = await confine(this.root, rel, false);
      if (real && !(await fs.promises.stat(real)).isFile()) throw new ControlError('not_a_file', `${rel} is not a file.`, 400);
      const current = real ? versionOf(await fs.promises.readFile(real)) : null;
      if (version !== undefined && current !== version) {
        throw Object.assign(
          new ControlError('version_conflict', `Not written: ${rel} is at ${current ?? 'nothing (missing)'}, not ${version}.`, 409),
          { current },
        );
      }
      await beforeWrite(rel);
      await writeAtomic(real ?? abs, bytes);
      return { path: rel, size: bytes.length, version: versionOf(bytes), previous: current, created: current === null };
    });
  }
}

function withDetails(err: ControlError, details: string[], version?: string): ControlError {
  return Object.assign(err, { details, version });
}
