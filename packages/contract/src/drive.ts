import { z } from 'zod';

import { nameProblem, normalizeName } from '@svc/kit';

/** The most bytes (UTF-8) of a drive item's name. */
export const MAX_DRIVE_NAME_BYTES = 255;

/**
 * A file or folder name as the drive stores it (docs/drive.md), in NFC: not empty, not `.` or `..`,
 * no `/`, no control, bidirectional or invisible format characters (packages/kit/src/names.ts), at
 * most 255 bytes. The drive service validates every name it is given with it (`invalid_name`), from
 * whichever front the name came.
 */
export const DriveName = z
  .string()
  .transform(normalizeName)
  .superRefine((name, ctx) => {
    const problem =
      name.trim() === ''
        ? 'A name is required.'
        : name === '.' || name === '..'
          ? 'A name cannot be "." or "..".'
          : /[/\u0000-\u001f\u007f]/.test(name)
            ? 'A name cannot contain "/" or control characters.'
            : nameProblem(name)
              ? `A name ${nameProblem(name)}.`
              : Buffer.byteLength(name, 'utf8') > MAX_DRIVE_NAME_BYTES
                ? `A name is at most ${MAX_DRIVE_NAME_BYTES} bytes (UTF-8).`
                : null;
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
