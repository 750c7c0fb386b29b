import { createLogger } from '@svc/kit';

test("a failed statement's parameters never reach the log; its message and code do", async () => {
  const lines: string[] = [];
  const log = createLogger({ service: 't', level: 'info', destination: { write: (l: string) => void lines.push(l) } });
  const err = Object.assign(new Error('invalid byte sequence'), { code: '22021', params: ['key_1', 'a'.repeat(64)] });
  log.error({ err: Object.assign(new Error('wrapped', { cause: err }), { params: ['x'] }) }, 'failed');
  log.error({ err }, 'failed');
  expect(lines).toHaveLength(2);
  for (const line of lines) {
    expect(line).not.toContain('a'.repeat(64));
    expect(JSON.parse(line).err.params).toBe('[redacted]');
  }
  expect(JSON.parse(lines[1]!).err).toMatchObject({ message: 'invalid byte sequence', code: '22021' });
});
