import { startTestStack, type TestStack } from '../support/stack';

// The code tools beyond code.run (docs/run-code.md): a syntax check, a script run from the drive,
// and code run over JSON input and drive files passed as data (read as the caller).

let t: TestStack;
let alice: string;
let bob: string;

beforeAll(async () => {
  t = await startTestStack({ SVC_MCP_RUN_CODE_POOL_SIZE: '1' });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
}, 60_000);
afterAll(() => t?.stop());

const call = (path: string, body: unknown, key = alice) => t.call('POST', path, { key, body });
const write = async (path: string, content: string, key = alice) => (await t.ok('PUT', '/drive/text', key, { path, content })).body.id as string;

test('check: valid code with its mode; a syntax error with its line and column; nothing runs', async () => {
  expect((await call('/code/check', { code: 'const x = 1;\nx + 1' })).body).toEqual({ valid: true, mode: 'script', error: null });
  expect((await call('/code/check', { code: 'export default 1' })).body).toMatchObject({ valid: true, mode: 'module' });
  expect((await call('/code/check', { code: 'return 5' })).body).toMatchObject({ valid: true, mode: 'function' });
  const bad = await call('/code/check', { code: 'const a = 1;\nconst b = ;\n' });
  expect(bad.status).toBe(200);
  expect(bad.body).toMatchObject({ valid: false, error: { code: 'syntax_error', line: 2 } });
  // Checking does not run: an endless loop compiles and answers at once.
  const loop = await call('/code/check', { code: 'while (true) {}' });
  expect(loop.body).toMatchObject({ valid: true, error: null });
  expect((await call('/code/check', { code: '' })).status).toBe(400);
});

test('run_file: a drive script with input and data files; a binary or missing file is refused', async () => {
  const data = await write('code/data.csv', 'a,b\n1,2\n3,4\n');
  const script = await write(
    'code/sum.js',
    'const rows = files[0].text.trim().split("\\n").slice(1).map((l) => l.split(",").map(Number));\nrows.reduce((s, r) => s + r[0] * input.factor + r[1], 0)',
  );
  const r = await call('/code/run-file', { fileId: script, input: { factor: 10 }, dataFileIds: [data] });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ result: 46, error: null, mode: 'script' });
  const failing = await write('code/throws.js', 'null.x');
  expect((await call('/code/run-file', { fileId: failing })).body.error).toMatchObject({ code: 'script_error', line: 1 });
  const missing = await call('/code/run-file', { fileId: `file_${'0'.repeat(26)}` });
  expect(missing.status).toBe(404);
  expect((await call('/code/run-file', { fileId: 'nope' })).status).toBe(400);
});

test('run_with_data: files are data (text, or base64 for binary), input is any JSON; data is required', async () => {
  const notes = await write('code/notes.md', '# Title\nbody\n');
  const r = await call('/code/run-with-data', {
    code: 'files.map((f) => [f.name, f.text.split("\\n")[0], f.contentType]).concat([input])',
    input: [1, 'two'],
    dataFileIds: [notes],
  });
  expect(r.body).toMatchObject({
    result: [
      ['notes.md', '# Title', 'text/markdown; charset=utf-8'],
      [1, 'two'],
    ],
    error: null,
  });
  expect((await call('/code/run-with-data', { code: '1' })).status).toBe(400);
  expect((await call('/code/run-with-data', { code: 'input', input: null })).body).toMatchObject({ result: null, error: null });
});

test("another account's files are not found to the code tools", async () => {
  const secret = await write('code/secret.txt', 'secret');
  const script = await write('code/s.js', '1');
  expect((await call('/code/run-with-data', { code: 'files[0].text', dataFileIds: [secret] }, bob)).status).toBe(404);
  expect((await call('/code/run-file', { fileId: script }, bob)).status).toBe(404);
});
