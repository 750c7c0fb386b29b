/**
 * A module loaded at its first use instead of at start: `lazy(() => require('x') as typeof X)`
 * (with `import type * as X from 'x'` for its types). For dependencies that a start does not need
 * and that cost tens of milliseconds to load (the MCP SDK, isomorphic-git): the all-in-one
 * process's restart is mostly module loading.
 */
export function lazy<T extends object>(load: () => T): T {
  let loaded: T | undefined;
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get((loaded ??= load()), key),
    has: (_, key) => Reflect.has((loaded ??= load()), key),
  });
}
