import { z } from 'zod';

import type { agents_memory } from '@svc/proto';

import { ListQuery, Nullable, type Route, type RouteInput, routeWith, Timestamp } from '../../route.js';

/**
 * Agent memory (docs/memory.md): durable JSON values the acting account's people and agents keep
 * across threads, by namespace and key; versions, history, expiry, counters and lists.
 */

export const MemoryNamespace = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be 1–64 of a-z 0-9 . _ - (starting with a letter or digit)')
  .describe('A namespace, such as "user-prefs" or an agent id.');
export const MemoryKey = z
  .string()
  .regex(/^[A-Za-z0-9._:@-]{1,200}$/, 'must be 1–200 of A-Z a-z 0-9 . _ : @ -')
  .describe('The memory’s key, such as "theme".');
const Ttl = z
  .number()
  .int()
  .min(1)
  .max(366 * 24 * 3600)
  .describe('Seconds until the entry expires (then it is gone for every read and write).');
const Version = z.number().int().min(0);
export const JsonValue = z
  .unknown()
  .refine((v) => v !== undefined, 'a JSON value is required')
  .describe('Any JSON value (at most 64 KiB as JSON).');

export const MemoryEntry = z
  .object({
    namespace: z.string(),
    key: z.string(),
    value: z.unknown().describe('The JSON value.'),
    version: z.number().int().describe('1 when first written, +1 per write (continuing after a delete).'),
    expiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    updatedBy: z.record(z.string(), z.unknown()).describe('Who wrote it last: {kind, id, keyId, channel, accountId}.'),
  })
  .meta({ id: 'MemoryEntry' });

export const memoryEntryJson = (e: agents_memory.MemoryEntry) => ({
  namespace: e.namespace,
  key: e.key,
  value: JSON.parse(e.valueJson) as unknown,
  version: Number(e.version),
  expiresAt: e.expiresAt ?? null,
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
  updatedBy: JSON.parse(e.updatedByJson || '{}') as Record<string, unknown>,
});

const EntryList = z.object({ entries: z.array(MemoryEntry), nextCursor: Nullable(z.string()) }).meta({ id: 'MemoryEntryList' });
const Deleted = z.object({ deleted: z.number().int().describe('How many entries were deleted (0 when none existed).') });

const nsParams = z.object({ namespace: MemoryNamespace });
const keyParams = z.object({ namespace: MemoryNamespace, key: MemoryKey });
const nk = (i: RouteInput<{ namespace: string; key: string }>) => ({ namespace: i.params.namespace, key: i.params.key });
const one = (res: agents_memory.MemoryEntryResponse) => memoryEntryJson(res.entry!);

const base: Pick<Route, 'tag' | 'auth' | 'principals' | 'authority'> = {
  tag: 'memory',
  auth: 'key',
  principals: ['human', 'agent'],
  authority: false,
};
const memRoute = routeWith(base);

export const memoryRoutes: Route[] = [
  memRoute({
    id: 'memory.namespaces.list',
    method: 'get',
    path: '/memory',
    summary: 'The namespaces of the account’s memory, by name, with their entry counts and sizes.',
    query: ListQuery,
    response: z
      .object({
        namespaces: z.array(
          z.object({
            name: z.string(),
            entries: z.number().int(),
            bytes: z.number().int().describe('The size of its values as JSON.'),
            updatedAt: Timestamp.describe('The last write of an entry.'),
          }),
        ),
        nextCursor: Nullable(z.string()),
      })
      .meta({ id: 'MemoryNamespaceList' }),
    handler: {
      rpc: 'agents.listMemoryNamespaces',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ namespaces: res.namespaces.map((n) => ({ ...n, bytes: Number(n.bytes) })), nextCursor: res.nextCursor ?? null }),
    },
  }),
  memRoute({
    id: 'memory.search',
    method: 'get',
    path: '/memory/search',
    summary: 'Entries whose key or value holds a text (case-insensitive), most recently written first.',
    query: z.object({
      q: z.string().min(1).max(200).describe('The text to find in keys and values.'),
      namespace: MemoryNamespace.optional().describe('Only this namespace.'),
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('How many entries to return at most (1–100; default 20).'),
    }),
    response: EntryList,
    handler: {
      rpc: 'agents.searchMemory',
      request: (i) => ({ query: i.query.q, namespace: i.query.namespace, limit: i.query.limit }),
      response: (res) => ({ entries: res.entries.map(memoryEntryJson), nextCursor: null }),
    },
  }),
  memRoute({
    id: 'memory.namespaces.delete',
    method: 'delete',
    path: '/memory/:namespace',
    summary: 'Clear a namespace: every entry and its history.',
    params: nsParams,
    response: Deleted.meta({ id: 'MemoryDeleted' }),
    handler: { rpc: 'agents.deleteMemoryNamespace', request: (i) => ({ namespace: i.params.namespace }) },
  }),
  memRoute({
    id: 'memory.namespaces.copy',
    method: 'post',
    effect: 'creates',
    path: '/memory/:namespace/copy',
    summary: 'Copy every entry of a namespace into another one (a snapshot, a fork for an experiment).',
    errors: ['namespace_not_found'],
    params: nsParams,
    body: z
      .object({
        to: MemoryNamespace.describe('The target namespace.'),
        overwrite: z.boolean().default(false).describe('Replace keys the target already holds (default: keep them).'),
      })
      .strict()
      .meta({ id: 'CopyMemoryNamespaceRequest' }),
    response: z
      .object({ copied: z.number().int(), skipped: z.number().int().describe('Keys the target held and kept.') })
      .meta({ id: 'CopiedMemoryNamespace' }),
    handler: {
      rpc: 'agents.copyMemoryNamespace',
      request: (i) => ({ namespace: i.params.namespace, to: i.body.to, overwrite: i.body.overwrite }),
    },
  }),
  memRoute({
    id: 'memory.list',
    method: 'get',
    path: '/memory/:namespace/entries',
    summary: 'Entries of a namespace by key, optionally those whose key starts with a prefix.',
    params: nsParams,
    query: ListQuery.extend({ prefix: z.string().max(200).default('').describe('Only keys starting with it.') }),
    response: EntryList,
    handler: {
      rpc: 'agents.listMemory',
      request: (i) => ({ namespace: i.params.namespace, prefix: i.query.prefix, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({ entries: res.entries.map(memoryEntryJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  memRoute({
    id: 'memory.getMany',
    method: 'post',
    effect: 'reads',
    path: '/memory/:namespace/get-many',
    summary: 'Read up to 100 keys of a namespace at once; absent ones are listed as missing.',
    params: nsParams,
    body: z
      .object({ keys: z.array(MemoryKey).min(1).max(100).describe('1–100 keys to read; those not there are listed under missing.') })
      .strict()
      .meta({ id: 'MemoryKeysRequest' }),
    response: z.object({ entries: z.array(MemoryEntry), missing: z.array(z.string()) }).meta({ id: 'MemoryEntriesFound' }),
    handler: {
      rpc: 'agents.getManyMemory',
      request: (i) => ({ namespace: i.params.namespace, keys: i.body.keys }),
      response: (res) => ({ entries: res.entries.map(memoryEntryJson), missing: res.missing }),
    },
  }),
  memRoute({
    id: 'memory.setMany',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/set-many',
    summary: 'Write up to 100 entries of a namespace in one transaction: all of them or none.',
    params: nsParams,
    body: z
      .object({
        entries: z
          .array(z.object({ key: MemoryKey, value: JsonValue, ttlSeconds: Ttl.optional() }).strict())
          .min(1)
          .max(100)
          .describe('1–100 entries to write, each a key, a JSON value and an optional time to live.'),
      })
      .strict()
      .meta({ id: 'SetManyMemoryRequest' }),
    response: z.object({ entries: z.array(MemoryEntry) }).meta({ id: 'MemoryEntriesWritten' }),
    handler: {
      rpc: 'agents.setManyMemory',
      request: (i) => ({
        namespace: i.params.namespace,
        items: (i.body.entries as { key: string; value: unknown; ttlSeconds?: number }[]).map((e) => ({
          key: e.key,
          valueJson: JSON.stringify(e.value),
          ttlSeconds: e.ttlSeconds,
        })),
      }),
      response: (res) => ({ entries: res.entries.map(memoryEntryJson) }),
    },
  }),
  memRoute({
    id: 'memory.deleteMany',
    method: 'post',
    effect: 'deletes',
    path: '/memory/:namespace/delete-many',
    summary: 'Delete up to 100 keys of a namespace in one transaction.',
    params: nsParams,
    body: z
      .object({ keys: z.array(MemoryKey).min(1).max(100).describe('1–100 keys to delete; a missing key is skipped.') })
      .strict()
      .meta({ id: 'DeleteManyMemoryRequest' }),
    response: Deleted,
    handler: { rpc: 'agents.deleteManyMemory', request: (i) => ({ namespace: i.params.namespace, keys: i.body.keys }) },
  }),
  memRoute({
    id: 'memory.get',
    method: 'get',
    path: '/memory/:namespace/entries/:key',
    summary: 'One entry: its value, version and expiry.',
    errors: ['memory_not_found'],
    params: keyParams,
    response: MemoryEntry,
    handler: { rpc: 'agents.getMemory', request: nk, response: one },
  }),
  memRoute({
    id: 'memory.set',
    statuses: { 409: 'The entry is not at the version the request names (`version_mismatch`).' },
    method: 'put',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key',
    summary: 'Write an entry’s value (replacing it and its expiry); with ifVersion, only if it is still at that version.',
    errors: ['value_too_large', 'version_mismatch'],
    params: keyParams,
    body: z
      .object({
        value: JsonValue,
        ttlSeconds: Ttl.optional(),
        ifVersion: Version.optional().describe('Compare-and-set: the version you read (0: the key must not exist); else 409 version_mismatch.'),
      })
      .strict()
      .meta({ id: 'SetMemoryRequest' }),
    response: MemoryEntry,
    handler: {
      rpc: 'agents.setMemory',
      request: (i) => ({ ...nk(i), valueJson: JSON.stringify(i.body.value), ttlSeconds: i.body.ttlSeconds, ifVersion: i.body.ifVersion }),
      response: one,
    },
  }),
  memRoute({
    id: 'memory.merge',
    statuses: {
      409: 'The entry is not at the version the request names (`version_mismatch`).',
      422: 'The entry’s value is not an object: merge works on objects only (`value_not_object`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key',
    summary: 'Merge fields into an object value (JSON merge patch: null removes a field); creates the entry when absent.',
    errors: ['value_not_object'],
    params: keyParams,
    body: z
      .object({
        patch: z.record(z.string(), z.unknown()).describe('The fields to set; null removes one.'),
        ifVersion: Version.optional().describe('Only if the entry is at this version (0: absent); else 409 version_mismatch.'),
      })
      .strict()
      .meta({ id: 'MergeMemoryRequest' }),
    response: MemoryEntry,
    handler: {
      rpc: 'agents.mergeMemory',
      request: (i) => ({ ...nk(i), patchJson: JSON.stringify(i.body.patch), ifVersion: i.body.ifVersion }),
      response: one,
    },
  }),
  memRoute({
    id: 'memory.delete',
    statuses: { 409: 'The entry is not at the version the request names (`version_mismatch`).' },
    method: 'delete',
    path: '/memory/:namespace/entries/:key',
    summary: 'Delete an entry (idempotent); with ifVersion, only if it is at that version.',
    errors: ['version_mismatch'],
    params: keyParams,
    query: z.object({ ifVersion: z.coerce.number().int().min(1).optional().describe('Only if the entry is at this version; else 409.') }),
    response: Deleted,
    handler: { rpc: 'agents.deleteMemory', request: (i) => ({ ...nk(i), ifVersion: i.query.ifVersion }) },
  }),
  memRoute({
    id: 'memory.increment',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key/increment',
    summary: 'Add to a number atomically (a counter starting at 0 when absent); answers the new value.',
    errors: ['value_not_number'],
    params: keyParams,
    body: z
      .object({
        by: z.number().default(1).describe('The amount (negative to decrement; default 1).'),
        ttlSeconds: Ttl.optional().describe('The expiry of a counter this call creates (a window); an existing one keeps its own.'),
      })
      .strict()
      .meta({ id: 'IncrementMemoryRequest' }),
    response: MemoryEntry,
    handler: { rpc: 'agents.incrementMemory', request: (i) => ({ ...nk(i), by: i.body.by, ttlSeconds: i.body.ttlSeconds }), response: one },
  }),
  memRoute({
    id: 'memory.append',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key/append',
    summary: 'Append items to a list value atomically (a new list when absent), optionally keeping only the last maxLength.',
    errors: ['value_not_list'],
    params: keyParams,
    body: z
      .object({
        values: z.array(JsonValue).min(1).max(100).describe('The items to add at the end.'),
        maxLength: z.number().int().min(1).max(10_000).optional().describe('Keep only the last maxLength items (a rolling log).'),
      })
      .strict()
      .meta({ id: 'AppendMemoryRequest' }),
    response: MemoryEntry,
    handler: {
      rpc: 'agents.appendMemory',
      request: (i) => ({ ...nk(i), valuesJson: (i.body.values as unknown[]).map((v) => JSON.stringify(v)), maxLength: i.body.maxLength }),
      response: one,
    },
  }),
  memRoute({
    id: 'memory.pop',
    method: 'post',
    effect: 'deletes',
    path: '/memory/:namespace/entries/:key/pop',
    summary: 'Take items off a list value atomically (a work queue): from its start or its end.',
    errors: ['memory_not_found'],
    params: keyParams,
    body: z
      .object({
        from: z.enum(['start', 'end']).default('end').describe('start: the oldest items (a queue); end: the newest (a stack).'),
        count: z.number().int().min(1).max(100).default(1).describe('How many items to take off the list (1–100; default 1).'),
      })
      .strict()
      .meta({ id: 'PopMemoryRequest' }),
    response: z
      .object({ values: z.array(z.unknown()).describe('The items taken, in the order taken.'), entry: MemoryEntry })
      .meta({ id: 'PoppedMemory' }),
    handler: {
      rpc: 'agents.popMemory',
      request: (i) => ({ ...nk(i), from: i.body.from, count: i.body.count }),
      response: (res) => ({ values: res.valuesJson.map((v) => JSON.parse(v) as unknown), entry: memoryEntryJson(res.entry!) }),
    },
  }),
  memRoute({
    id: 'memory.expire',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key/expire',
    summary: 'Set or remove an entry’s expiry without changing its value.',
    params: keyParams,
    body: z
      .object({ ttlSeconds: Ttl.nullable().describe('Seconds from now; null: never expires.') })
      .strict()
      .meta({ id: 'ExpireMemoryRequest' }),
    response: MemoryEntry,
    handler: { rpc: 'agents.expireMemory', request: (i) => ({ ...nk(i), ttlSeconds: i.body.ttlSeconds ?? undefined }), response: one },
  }),
  memRoute({
    id: 'memory.rename',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key/rename',
    summary: 'Move an entry to another key of its namespace (409 key_exists unless overwrite).',
    errors: ['key_exists'],
    params: keyParams,
    body: z
      .object({ newKey: MemoryKey, overwrite: z.boolean().default(false).describe('Replace a value the new key holds.') })
      .strict()
      .meta({ id: 'RenameMemoryRequest' }),
    response: MemoryEntry,
    handler: {
      rpc: 'agents.renameMemory',
      request: (i) => ({ ...nk(i), newKey: i.body.newKey, overwrite: i.body.overwrite }),
      response: one,
    },
  }),
  memRoute({
    id: 'memory.history',
    method: 'get',
    path: '/memory/:namespace/entries/:key/history',
    summary: 'The versions of a key, newest first: each write with its value, operation, time and author (the last 100).',
    errors: ['memory_not_found'],
    params: keyParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('How many earlier values to return at most (1–100; default 20).'),
    }),
    response: z
      .object({
        versions: z.array(
          z.object({
            version: z.number().int(),
            op: z.string().describe('set, merge, increment, append, pop, expire, rename, copy, restore or delete.'),
            value: z.unknown().optional().describe('The value it wrote (absent for a delete).'),
            at: Timestamp,
            by: z.record(z.string(), z.unknown()),
          }),
        ),
      })
      .meta({ id: 'MemoryHistory' }),
    handler: {
      rpc: 'agents.memoryHistory',
      request: (i) => ({ ...nk(i), limit: i.query.limit }),
      response: (res) => ({
        versions: res.versions.map((v) => ({
          version: Number(v.version),
          op: v.op,
          ...(v.valueJson === undefined ? {} : { value: JSON.parse(v.valueJson) as unknown }),
          at: v.at,
          by: JSON.parse(v.byJson || '{}') as Record<string, unknown>,
        })),
      }),
    },
  }),
  memRoute({
    id: 'memory.restore',
    method: 'post',
    effect: 'updates',
    path: '/memory/:namespace/entries/:key/restore',
    summary: 'Undo: write a version’s value from the key’s history again (a new version; also after a delete).',
    errors: ['version_not_found'],
    params: keyParams,
    body: z
      .object({ version: z.number().int().min(1).describe('The version to bring back.') })
      .strict()
      .meta({ id: 'RestoreMemoryRequest' }),
    response: MemoryEntry,
    handler: { rpc: 'agents.restoreMemory', request: (i) => ({ ...nk(i), version: i.body.version }), response: one },
  }),
];
