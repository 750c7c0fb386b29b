import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { createPgliteSql, PGLITE_SETTINGS } from '@svc/kit';

/**
 * The embedded database's counterpart of `createDatabase` (CREATE DATABASE copies a template on
 * the real server): a data folder as PGlite's initdb leaves it, made once per machine and copied
 * into each embedded stack's data folder before it starts. A fresh PGlite runs initdb in
 * WebAssembly, which took 20–30 s of a stack's start on a loaded 2-core machine (near the 30 s hook
 * bound); a copy starts in about 3 s. The stack still applies every migration itself, and the
 * template is made by the same code and settings a stack uses (createPgliteSql), so it is what a
 * stack's own first start would have made.
 */
export async function seedEmbeddedDatabase(pgDir: string): Promise<void> {
  if (fs.existsSync(pgDir)) return;
  fs.mkdirSync(path.dirname(pgDir), { recursive: true });
  fs.cpSync(await template(), pgDir, { recursive: true });
}

let made: Promise<string> | undefined;

function template(): Promise<string> {
  made ??= (async () => {
    const pglite = JSON.parse(
      fs.readFileSync(path.join(require.resolve('@electric-sql/pglite').split('/dist/')[0]!, 'package.json'), 'utf8'),
    ).version;
    const key = createHash('sha256')
      .update(`${pglite} ${PGLITE_SETTINGS.join(' ')}`)
      .digest('hex')
      .slice(0, 16);
    const dir = path.join(os.tmpdir(), 'svc-test-pglite-template', key);
    if (fs.existsSync(path.join(dir, 'PG_VERSION'))) return dir;
    // Made aside and renamed into place, so that another jest worker never copies half of one.
    const aside = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-pglite-making-'));
    const sql = await createPgliteSql(path.join(aside, 'pg'));
    await sql.close();
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    try {
      fs.renameSync(path.join(aside, 'pg'), dir);
    } catch (err) {
      if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) throw err; // not another worker's, made meanwhile
    }
    fs.rmSync(aside, { recursive: true, force: true });
    return dir;
  })();
  return made;
}
