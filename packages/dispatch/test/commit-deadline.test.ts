import { commitDeadlineMs } from '@svc/dispatch';

/**
 * An upload's commit (docs/reliability.md#faults): a small file's commit has the usual deadline, so
 * a stopped drive answers it 504 as soon as any other call; a large one gets the time of its
 * server-side copy on top, at most 120 s.
 */
describe('commitDeadlineMs', () => {
  test('a small file: the usual deadline (a millisecond more for 8 KiB)', () => {
    expect(commitDeadlineMs(3000, 0)).toBe(3000);
    expect(commitDeadlineMs(3000, 8 * 1024)).toBe(3001);
    expect(commitDeadlineMs(10_000, 512)).toBe(10_001);
  });

  test('a large file: the copy at 10 MiB/s on top, at most 120 s', () => {
    expect(commitDeadlineMs(10_000, 100 * 1024 * 1024)).toBe(20_000);
    expect(commitDeadlineMs(10_000, 5 * 1024 ** 3)).toBe(120_000);
  });

  test('never below the usual deadline, even when that is longer than 120 s', () => {
    expect(commitDeadlineMs(200_000, 5 * 1024 ** 3)).toBe(200_000);
  });
});
