#!/usr/bin/env node
/**
 * Packs the two Node clients into tarballs a user installs with `npm install <tarball>`
 * (README, "Clients"): the TypeScript SDK with the `svc` command (packages/sdk-ts, no
 * dependencies) and the local host `svc-host` (apps/host). Run `npm run build` first.
 *
 *   node scripts/pack-clients.mjs [destination folder]   (default ./dist-clients)
 *
 * The host imports @svc/quickjs from this workspace, which is on no registry: the host is packed
 * from a staging folder where that package sits in node_modules and is listed in
 * bundleDependencies, and an npm-shrinkwrap.json taken from this repository's package-lock.json
 * pins every registry dependency to the version and integrity tested here, so an install needs
 * nothing but those tarballs (from the npm cache offline, or the registry).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const LOCK = readJson(path.join(ROOT, 'package-lock.json')).packages;

/** The lockfile path `name` resolves to from the package at lockfile path `from`, as Node's lookup does. */
function resolveFrom(from, name) {
  let dir = from;
  for (;;) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (LOCK[candidate]) return candidate;
    if (!dir) return undefined;
    const nested = dir.lastIndexOf('/node_modules/');
    if (nested >= 0) dir = dir.slice(0, nested);
    else if (dir.startsWith('node_modules/')) dir = '';
    else dir = path.posix.dirname(dir) === '.' ? '' : path.posix.dirname(dir);
  }
}

const runtimeDeps = (entry) => {
  const optionalPeers = new Set(Object.keys(entry.peerDependenciesMeta ?? {}).filter((n) => entry.peerDependenciesMeta[n].optional));
  return [
    ...Object.keys(entry.dependencies ?? {}),
    ...Object.keys(entry.optionalDependencies ?? {}),
    ...Object.keys(entry.peerDependencies ?? {}).filter((n) => !optionalPeers.has(n)),
  ];
};

/** The registry's address of a tarball (npm swaps in the configured registry's host). */
const tarballUrl = (name, version) => `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${version}.tgz`;

/**
 * The workspace packages `workspace` needs (bundled) and the registry packages (pinned), walked
 * from the lockfile. Registry packages land at the same place under the packed package as they do
 * in this repository (apps/host/node_modules/x and node_modules/x both become node_modules/x).
 */
function closure(workspace) {
  const bundled = new Map(); // name -> workspace folder
  const pinned = new Map(); // shrinkwrap path -> lock entry
  const seen = new Set();
  const visit = (from, name) => {
    const at = resolveFrom(from, name);
    if (!at) {
      if (LOCK[from]?.optionalDependencies?.[name]) return;
      throw new Error(`pack-clients: ${name} (needed by ${from}) is not in package-lock.json`);
    }
    if (seen.has(at)) return;
    seen.add(at);
    const entry = LOCK[at];
    if (entry.link) {
      bundled.set(name, entry.resolved);
      for (const dep of runtimeDeps(LOCK[entry.resolved])) visit(entry.resolved, dep);
      return;
    }
    const local = at.startsWith(`${workspace}/`) ? at.slice(workspace.length + 1) : at;
    if (!local.startsWith('node_modules/')) throw new Error(`pack-clients: cannot place ${at} under the packed package`);
    if (pinned.has(local)) throw new Error(`pack-clients: two versions of ${local} would share one place`);
    pinned.set(local, entry);
    for (const dep of runtimeDeps(entry)) visit(at, dep);
  };
  for (const dep of runtimeDeps(LOCK[workspace])) visit(workspace, dep);
  return { bundled, pinned };
}

const copyPackage = (from, to) => {
  const manifest = readJson(path.join(from, 'package.json'));
  fs.mkdirSync(to, { recursive: true });
  for (const f of ['package.json', ...(manifest.files ?? ['dist'])]) fs.cpSync(path.join(from, f), path.join(to, f), { recursive: true });
  return manifest;
};

function npmPack(dir, dest) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dest], { cwd: dir, encoding: 'utf8' });
  return path.join(dest, JSON.parse(out)[0].filename);
}

export function packHost(dest) {
  const workspace = 'apps/host';
  const { bundled, pinned } = closure(workspace);
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-host-pack-'));
  try {
    const manifest = copyPackage(path.join(ROOT, workspace), stage);
    const dependencies = { ...manifest.dependencies };
    const bundledEntries = {};
    for (const [name, folder] of bundled) {
      const m = copyPackage(path.join(ROOT, folder), path.join(stage, 'node_modules', name));
      // What a bundled package needs from the registry is installed beside it, at the host's top.
      for (const [dep, range] of Object.entries(m.dependencies ?? {})) if (!bundled.has(dep)) dependencies[dep] ??= range;
      bundledEntries[`node_modules/${name}`] = { version: m.version, inBundle: true, dependencies: m.dependencies };
    }
    delete manifest.devDependencies;
    Object.assign(manifest, {
      dependencies,
      bundleDependencies: [...bundled.keys()],
      files: [...(manifest.files ?? ['dist']), 'npm-shrinkwrap.json'],
    });
    fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
    const packages = { '': { name: manifest.name, version: manifest.version, dependencies, bin: manifest.bin }, ...bundledEntries };
    for (const [at, entry] of [...pinned].sort(([a], [b]) => a.localeCompare(b))) {
      const rest = { ...entry };
      for (const flag of ['dev', 'devOptional', 'peer']) delete rest[flag];
      const name = at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length);
      packages[at] = { ...rest, resolved: rest.resolved ?? tarballUrl(name, rest.version) };
    }
    const shrinkwrap = { name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages };
    fs.writeFileSync(path.join(stage, 'npm-shrinkwrap.json'), JSON.stringify(shrinkwrap, null, 2) + '\n');
    return npmPack(stage, dest);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

export const packSdk = (dest) => npmPack(path.join(ROOT, 'packages/sdk-ts'), dest);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dest = path.resolve(process.argv[2] ?? path.join(ROOT, 'dist-clients'));
  fs.mkdirSync(dest, { recursive: true });
  for (const dist of ['packages/sdk-ts/dist/cli.js', 'apps/host/dist/cli.js']) {
    if (!fs.existsSync(path.join(ROOT, dist))) throw new Error(`pack-clients: ${dist} is missing; run npm run build first`);
  }
  console.log(packSdk(dest));
  console.log(packHost(dest));
}
