import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

// The protos follow buf's STANDARD rules (one package per service, versioned v1); see buf.yaml.
test('buf lint passes on proto/', () => {
  const res = spawnSync(path.join(ROOT, 'node_modules/.bin/buf'), ['lint'], { cwd: ROOT, encoding: 'utf8' });
  expect(res.stdout + res.stderr).toBe('');
  expect(res.status).toBe(0);
});
