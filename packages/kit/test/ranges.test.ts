import { byteRange } from '@svc/kit';

// The Range header applied to a size: the drive's downloads and the public sites front use it.
describe('byte ranges', () => {
  test('one range of bytes, else the whole file', () => {
    expect(byteRange(100, 'bytes=0-9')).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(byteRange(100, 'bytes=5-')).toEqual({ kind: 'partial', start: 5, end: 99 });
    expect(byteRange(100, 'bytes=-3')).toEqual({ kind: 'partial', start: 97, end: 99 });
    for (const ignored of [undefined, 'bytes=5-1', 'bytes=0-1,3-4', 'items=0-1', 'bytes=-', 'bytes=x-1', 'bytes']) {
      expect(byteRange(100, ignored)).toEqual({ kind: 'whole' });
    }
  });

  test('the end is clamped to the file; a suffix longer than the file is all of it', () => {
    expect(byteRange(16, 'bytes=14-99')).toEqual({ kind: 'partial', start: 14, end: 15 });
    expect(byteRange(10, 'bytes=-500')).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(byteRange(10, 'Bytes = 2-3')).toEqual({ kind: 'partial', start: 2, end: 3 });
  });

  test('a range outside the file, an empty suffix, or any range of an empty file is unsatisfiable', () => {
    for (const [size, header] of [
      [16, 'bytes=99-'],
      [16, 'bytes=16-20'],
      [16, 'bytes=-0'],
      [0, 'bytes=0-'],
      [0, 'bytes=-5'],
      [0, 'bytes=0-0'],
    ] as const) {
      expect(byteRange(size, header)).toEqual({ kind: 'unsatisfiable' });
    }
  });
});
