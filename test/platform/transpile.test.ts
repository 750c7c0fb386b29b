import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm start` builds with SWC, file by file, without type-checking (scripts/transpile.js). Its
 * output must be the program tsc builds: every module SWC makes is loaded beside tsc's (npm test
 * has just built it) and must export the same names.
 */
test('SWC’s build of every module exports what tsc’s does', async () => {
  const root = path.resolve(__dirname, '..', '..');
  const { stdout } = await promisify(execFile)(process.execPath, ['scripts/transpile.js', '--check'], { cwd: root, maxBuffer: 16 << 20 });
  const { compared, differ } = JSON.parse(stdout) as { compared: number; differ: unknown[] };
  expect(differ).toEqual([]);
  expect(compared).toBeGreaterThan(300);
}, 120_000);
