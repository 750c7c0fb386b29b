import fs from 'node:fs';
import path from 'node:path';

/**
 * External programs some tests drive (litmus, rclone, go, ...). Where one is missing, its tests
 * are skipped with a warning on a developer's machine, but FAIL in CI (`CI=true`, which `.ci/run`
 * sets), naming the tool and how to install it: CI must not go green by not running them.
 */
export interface Tool {
  /** What the message calls it: `litmus`, `go`. */
  name: string;
  /** How to get it: `apt-get install -y litmus`. */
  install: string;
  /** Why it is unusable, or undefined when it is there; default: `name` is an executable on PATH. */
  missing?: () => string | undefined;
}

type TestFn = (name: string, fn: jest.ProvidesCallback, timeout?: number) => void;

export const inCI = process.env.CI === 'true';

/** Whether `name` is an executable file in a directory of PATH (what `command -v` finds). */
export function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir || '.', name), fs.constants.X_OK);
      return fs.statSync(path.join(dir || '.', name)).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * The `test` to declare tests with that need `tools`, and whether they are all there. With every
 * tool present it is jest's `test`; otherwise `test.skip` plus a warning, or, in CI, a test that
 * fails with what to install.
 */
export function withTools(what: string, ...tools: Tool[]): { test: TestFn; available: boolean } {
  const problems = tools
    .map((t) => {
      const why = t.missing ? t.missing() : onPath(t.name) ? undefined : `\`${t.name}\` is not installed (not on PATH)`;
      return why && `${why}; install it with: ${t.install}`;
    })
    .filter((p): p is string => Boolean(p));
  if (problems.length === 0) return { test, available: true };
  if (inCI) {
    const message = `${what} cannot run: a tool they need is missing, and in CI (CI=true) that is a failure, not a skip:\n  ${problems.join('\n  ')}`;
    return {
      available: false,
      test: (name) =>
        test(name, () => {
          throw new Error(message);
        }),
    };
  }
  console.warn(`SKIPPING ${what} (they run, and are required, in CI):\n  ${problems.join('\n  ')}`);
  return { test: test.skip, available: false };
}
