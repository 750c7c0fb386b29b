#!/usr/bin/env node
// Completes package-lock.json with the other platforms' optional binary packages.
//
// The npm registry this project is built against serves only the linux x64/arm64 builds of
// packages like @swc/core, @bufbuild/buf and jest's resolver, so `npm install` here leaves the
// other platforms' optional packages out of the lock, and `npm ci` then refuses the lock as out
// of sync. This adds each missing one as an optional entry with its os/cpu, which npm skips on
// other platforms and fetches by name and version on its own. Run after `npm install`.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const file = path.resolve(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pkgs = lock.packages;

const OS = ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony', 'sunos', 'openbsd', 'netbsd', 'aix'];
const CPU = {
  x64: 'x64',
  arm64: 'arm64',
  ia32: 'ia32',
  arm: 'arm',
  armv7: 'arm',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

function platformOf(name) {
  const tail = name.split('/').pop();
  const parts = tail.split('-');
  const os = OS.find((o) => parts.includes(o));
  const cpuPart = parts.find((p) => CPU[p]);
  if (!os || !cpuPart) return null;
  const out = { os: [os], cpu: [CPU[cpuPart]] };
  if (parts.some((p) => p.startsWith('musl'))) out.libc = ['musl'];
  else if (os === 'linux' && parts.some((p) => p.startsWith('gnu'))) out.libc = ['glibc'];
  return out;
}

let added = 0;
for (const [where, meta] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    // npm resolves a dependency next to its parent first, then up to the root.
    const nested = `${where ? where + '/' : ''}node_modules/${dep}`;
    const hoisted = `node_modules/${dep}`;
    if (pkgs[nested] || pkgs[hoisted]) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    pkgs[hoisted] = { version, optional: true, ...platform };
    added++;
  }
}
const sorted = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)));
lock.packages = sorted;
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`lock-platforms: ${added} optional platform packages added`);
