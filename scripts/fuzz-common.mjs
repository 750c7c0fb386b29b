/**
 * What scripts/fuzz.mjs and scripts/fuzz-stateful.mjs share: reading their options (node:util's
 * parseArgs; a bad option prints the usage and exits 2) and running one jest suite with the
 * fuzzer's environment, exiting with its status.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The command line's options: `strings` are options with a value (their defaults), `flags` options
 * without one; `whole` names the string options that must be whole numbers.
 */
export function readOptions(usage, { strings = {}, flags = [], whole = [] }) {
  const options = {};
  for (const [name, value] of Object.entries(strings)) options[name] = { type: 'string', ...(value === undefined ? {} : { default: value }) };
  for (const name of flags) options[name] = { type: 'boolean', default: false };
  let values;
  try {
    ({ values } = parseArgs({ options, strict: true, allowPositionals: false }));
  } catch (err) {
    console.error(`usage: ${usage} (${err.message})`);
    process.exit(2);
  }
  for (const k of whole) {
    if (values[k] !== undefined && !/^\d+$/.test(values[k])) {
      console.error(`--${k}: must be a whole number`);
      process.exit(2);
    }
  }
  return values;
}

/** Runs `suite` under jest with `env` added to this process's environment; exits with its status. */
export function runSuite(suite, env) {
  const jest = path.join(root, 'node_modules/jest/bin/jest.js');
  const run = spawnSync(process.execPath, ['--experimental-vm-modules', '--disable-warning=ExperimentalWarning', jest, '--runTestsByPath', suite], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: 'inherit',
  });
  process.exit(run.status ?? 1);
}
