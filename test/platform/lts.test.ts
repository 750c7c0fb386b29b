import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';

import { tempDir } from '../support/backends';
import { exitCode, freePort, ROOT, waitFor } from '../support/process';

// The platform runs on the Node here and on current LTS releases. .ci/run installs Node 22 from
// npm and names it in SVC_TEST_NODE_BINARIES (colon-separated); each one runs the built stack.
const binaries = (process.env.SVC_TEST_NODE_BINARIES ?? '').split(':').filter(Boolean);
if (!binaries.length) console.warn('lts.test: SVC_TEST_NODE_BINARIES is unset; only the Node running jest is covered');

describe.each(binaries.length ? binaries : [process.execPath])('the stack on %s', (node) => {
  test('starts, serves an authenticated request, and stops cleanly', async () => {
    const version = execFileSync(node, ['-v']).toString().trim();
    const port = await freePort();
    const key = `svc_${'1f'.repeat(32)}`;
    const child = spawn(node, ['--require', './packages/kit/dist/tracing/register.js', './apps/stack/dist/main.js'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        SVC_DATA_DIR: tempDir(),
        SVC_BOOTSTRAP_KEY: key,
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitFor(async () => ((await fetch(`${base}/v1/health`)).ok ? true : undefined), 40_000, `the stack on Node ${version}`);
      const created = await fetch(`${base}/v1/api/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: version }),
      });
      expect(created.status).toBe(201);
    } finally {
      child.kill('SIGTERM');
      expect(await exitCode(child)).toBe(0);
    }
  }, 60_000);
});
