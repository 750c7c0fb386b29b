/** Drive routes on JSON files: a value at a JSON Pointer, set one, remove one, merge-patch the document. */
import { z } from 'zod';

import { route } from '../../route.js';
import { DriveItem, QUOTA_ERRORS } from './files.js';
import { CONTENT_DAMAGED, fileParams, IfMatch, ifMatchOf, itemReply } from './kit.js';
import { KEY } from './kit.js';

const Pointer = z
  .string()
  .max(4096)
  .regex(/^(?:\/[\s\S]*)?$/, 'must be "" or start with "/" (RFC 6901)')
  .describe('An RFC 6901 JSON Pointer ("/users/0/name"; "" is the whole document).');

export const driveJsonRoutes = [
  route({
    ...KEY,
    id: 'drive.readJson',
    statuses: {
      500: CONTENT_DAMAGED,
      422: 'The file is not valid JSON or nests too deep, or nothing is at the pointer (`invalid_json`, `json_too_deep`, `pointer_not_found`).',
    },
    method: 'get',
    path: '/drive/:id/json',
    summary: 'The value at a JSON Pointer in a JSON file (the whole document without one); 422 when nothing is there.',
    errors: ['content_damaged', 'item_not_found', 'json_too_deep', 'pointer_not_found'],
    params: fileParams,
    query: z.object({ pointer: Pointer.default('') }),
    response: z.object({ value: z.unknown().describe('The value.'), etag: z.string() }).meta({ id: 'DriveJsonValue' }),
    handler: {
      rpc: 'drive.getJson',
      request: (i) => ({ id: i.params.id, pointer: i.query.pointer }),
      response: (r) => ({ value: JSON.parse(r.valueJson) as unknown, etag: r.etag }),
    },
  }),
  route({
    ...KEY,
    id: 'drive.setJson',
    statuses: {
      500: CONTENT_DAMAGED,
      ...QUOTA_ERRORS,
      422: 'The file is not valid JSON or nests too deep, or nothing is at the pointer (`invalid_json`, `json_too_deep`, `pointer_not_found`).',
    },
    method: 'put',
    effect: 'updates',
    path: '/drive/:id/json',
    summary: 'Set the value at a JSON Pointer in a JSON file (a member is added or replaced; "/list/-" appends), writing a new version.',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({
        pointer: Pointer,
        value: z
          .unknown()
          .refine((v) => v !== undefined, 'value is required')
          .describe('Any JSON value.'),
      })
      .strict()
      .meta({ id: 'SetJsonRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.setJson',
      request: (i) => ({ id: i.params.id, pointer: i.body.pointer, valueJson: JSON.stringify(i.body.value), ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.deleteJson',
    statuses: {
      500: CONTENT_DAMAGED,
      ...QUOTA_ERRORS,
      422: 'The file is not valid JSON or nests too deep, or nothing is at the pointer (`invalid_json`, `json_too_deep`, `pointer_not_found`).',
    },
    method: 'delete',
    path: '/drive/:id/json',
    summary: 'Remove the member or array element at a JSON Pointer from a JSON file (nothing there: nothing written, still 200).',
    errors: ['content_damaged', 'item_not_found'],
    params: fileParams,
    query: z.object({ pointer: Pointer.refine((v) => v !== '', 'the whole document cannot be removed') }),
    headers: IfMatch,
    response: DriveItem,
    handler: {
      rpc: 'drive.setJson',
      request: (i) => ({ id: i.params.id, pointer: i.query.pointer, ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
  route({
    ...KEY,
    id: 'drive.mergeJson',
    statuses: {
      500: CONTENT_DAMAGED,
      ...QUOTA_ERRORS,
      422: 'The file is not valid JSON or nests too deep, or nothing is at the pointer (`invalid_json`, `json_too_deep`, `pointer_not_found`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/drive/:id/json',
    summary: 'Apply an RFC 7396 JSON merge patch to a JSON file (null removes a member), writing a new version.',
    errors: ['content_damaged', 'invalid_json', 'item_not_found', 'json_too_deep'],
    params: fileParams,
    headers: IfMatch,
    body: z
      .object({ patch: z.record(z.string(), z.unknown()).describe('The merge patch: an object whose members replace, add or (null) remove.') })
      .strict()
      .meta({ id: 'MergeJsonRequest' }),
    response: DriveItem,
    bodyLimit: '6mb',
    handler: {
      rpc: 'drive.mergeJson',
      request: (i) => ({ id: i.params.id, patchJson: JSON.stringify(i.body.patch), ifMatch: ifMatchOf(i.headers) }),
      response: (r) => itemReply(r),
    },
  }),
];
