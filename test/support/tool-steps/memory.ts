import type { Step } from './types';

const ns = (s: { run: string }) => `mem-${s.run}`;

/** Memory tools (docs/memory.md): each valid call works on the namespace the first step fills. */
const MEMORY: Step[] = [
  {
    tool: 'memory_set',
    valid: (s) => ({ namespace: ns(s), key: 'profile', value: { name: 'Ada' } }),
    invalid: (s) => ({ namespace: ns(s), key: 'bad key!', value: 1 }),
  },
  { tool: 'memory_get', valid: (s) => ({ namespace: ns(s), key: 'profile' }), invalid: (s) => ({ namespace: ns(s), key: 'absent' }) },
  {
    tool: 'memory_merge',
    valid: (s) => ({ namespace: ns(s), key: 'profile', patch: { lang: 'en' } }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', patch: { a: 1 }, ifVersion: 99 }),
  },
  {
    tool: 'memory_set_many',
    valid: (s) => ({
      namespace: ns(s),
      entries: [
        { key: 'a', value: 1 },
        { key: 'b', value: 2 },
      ],
    }),
    invalid: (s) => ({ namespace: ns(s), entries: [] }),
  },
  {
    tool: 'memory_get_many',
    valid: (s) => ({ namespace: ns(s), keys: ['a', 'b', 'zz'] }),
    invalid: (s) => ({ namespace: ns(s), keys: [] }),
  },
  { tool: 'memory_list', valid: (s) => ({ namespace: ns(s), prefix: '' }), invalid: () => ({ namespace: 'BAD' }) },
  { tool: 'memory_search', valid: () => ({ q: 'Ada' }), invalid: () => ({ q: '' }) },
  {
    tool: 'memory_increment',
    valid: (s) => ({ namespace: ns(s), key: 'count', by: 2 }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile' }),
  },
  {
    tool: 'memory_append',
    valid: (s) => ({ namespace: ns(s), key: 'log', values: ['x', 'y'] }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', values: [1] }),
  },
  {
    tool: 'memory_pop',
    valid: (s) => ({ namespace: ns(s), key: 'log', from: 'start' }),
    invalid: (s) => ({ namespace: ns(s), key: 'no-list' }),
  },
  {
    tool: 'memory_expire',
    valid: (s) => ({ namespace: ns(s), key: 'a', ttlSeconds: 3600 }),
    invalid: (s) => ({ namespace: ns(s), key: 'absent', ttlSeconds: 10 }),
  },
  {
    tool: 'memory_rename',
    valid: (s) => ({ namespace: ns(s), key: 'b', newKey: 'b2' }),
    invalid: (s) => ({ namespace: ns(s), key: 'a', newKey: 'count' }),
  },
  { tool: 'memory_history', valid: (s) => ({ namespace: ns(s), key: 'profile' }), invalid: (s) => ({ namespace: ns(s), key: 'never' }) },
  {
    tool: 'memory_restore',
    valid: (s) => ({ namespace: ns(s), key: 'profile', version: 1 }),
    invalid: (s) => ({ namespace: ns(s), key: 'profile', version: 999 }),
  },
  { tool: 'memory_delete_many', valid: (s) => ({ namespace: ns(s), keys: ['a'] }), invalid: (s) => ({ namespace: ns(s), keys: [] }) },
  { tool: 'memory_delete', valid: (s) => ({ namespace: ns(s), key: 'b2' }), invalid: (s) => ({ namespace: ns(s), key: 'b2', ifVersion: 5 }) },
  { tool: 'memory_namespaces_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  {
    tool: 'memory_namespaces_copy',
    valid: (s) => ({ namespace: ns(s), to: `${ns(s)}-copy` }),
    invalid: () => ({ namespace: 'empty-namespace', to: 'elsewhere' }),
  },
  { tool: 'memory_namespaces_delete', valid: (s) => ({ namespace: `${ns(s)}-copy` }), invalid: () => ({ namespace: 'BAD!' }) },
];

export const STEPS: Step[] = [...MEMORY];
