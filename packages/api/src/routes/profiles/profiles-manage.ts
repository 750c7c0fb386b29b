import { z } from 'zod';

import type { profiles } from '@svc/proto';

import { ListQuery, Nullable, route, type RouteInput, Timestamp } from '../../route.js';
import {
  ProfileBranchName as BranchName,
  ProfileMessage as Message,
  ProfileRefId as RefId,
  ProfileWorkingChanges as WorkingChanges,
} from '../../schemas/profiles.js';
import { common, doc, IdParams, IfMatch, ifMatchOf, json, jsonText, Profile, ProfileBranch, ProfileVersion } from './profiles.js';

/**
 * More taste-profile operations (docs/profiles.md): branches as resources (list, read, rename,
 * reset), granular working changes (stage, unstage, discard), content reads (search, statistics),
 * a copy of a whole profile, and the revert of one version.
 */

const BranchDetail = ProfileBranch.extend({
  current: z.boolean().describe('It is the checked-out branch.'),
  versionCount: z.number().int().describe('Versions in its history (its head’s chain).'),
  headVersion: Nullable(ProfileVersion),
}).meta({ id: 'ProfileBranchDetail' });

const Kind = z.enum(['constraints', 'exemplars', 'comparisons']).describe('The kind of item.');
const Working = z
  .object({
    workingChanges: WorkingChanges,
    counts: z.record(z.string(), z.number().int()).describe('Staged items per kind.'),
  })
  .meta({ id: 'ProfileWorkingChangesView' });
const TagName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'must be 1–100 of A-Z a-z 0-9 . _ - (starting with a letter or digit)')
  .describe('A tag name, e.g. v1.0.');
const ProfileTag = z
  .object({
    name: z.string(),
    versionId: z.string(),
    message: Nullable(z.string()),
    createdBy: Nullable(z.record(z.string(), z.unknown())),
    createdAt: Timestamp,
  })
  .meta({ id: 'ProfileTag' });
const BranchParams = IdParams.extend({ branchId: RefId.describe('The branch’s id.') });
const body = (i: RouteInput) => JSON.stringify(i.body ?? {});
const read = (res: profiles.JsonReply) => jsonText(res.json);

export const profilesOpsRoutes = [
  route({
    ...common,
    id: 'profiles.branches.list',
    method: 'get',
    path: '/profiles/:id/branches',
    summary: 'A profile’s branches, each with its head version, history length and whether it is checked out.',
    errors: ['profile_not_found'],
    params: IdParams,
    response: z.object({ currentBranchId: z.string(), branches: z.array(BranchDetail) }).meta({ id: 'ProfileBranchList' }),
    handler: { rpc: 'profiles.listBranches', request: (i) => ({ id: i.params.id }), response: read },
  }),
  route({
    ...common,
    id: 'profiles.branches.get',
    method: 'get',
    path: '/profiles/:id/branches/:branchId',
    summary: 'One branch with its head version and history length.',
    errors: ['branch_not_found', 'profile_not_found'],
    params: BranchParams,
    response: BranchDetail,
    handler: { rpc: 'profiles.getBranch', request: (i) => ({ id: i.params.id, branchId: i.params.branchId }), response: read },
  }),
  route({
    ...common,
    id: 'profiles.branches.update',
    statuses: {
      409: 'Another branch has that name (`branch_name_taken`).',
      422: 'The change would break the resource’s rules (`main_branch_required`: main keeps its name).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/profiles/:id/branches/:branchId',
    summary: 'Rename a branch (not main) or change its description (null clears it).',
    errors: ['branch_name_taken', 'main_branch_required', 'profile_not_found'],
    params: BranchParams,
    headers: IfMatch,
    body: z
      .object({
        name: BranchName.optional(),
        description: z.string().max(2000).nullable().optional().describe('What the branch is for; null clears it.'),
      })
      .strict()
      .refine((b) => Object.keys(b).length > 0, 'must change at least one field')
      .meta({ id: 'UpdateProfileBranchRequest' }),
    response: BranchDetail,
    handler: {
      rpc: 'profiles.updateBranch',
      request: (i) => ({ id: i.params.id, branchId: i.params.branchId, ifMatch: ifMatchOf(i), bodyJson: body(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.branches.reset',
    method: 'post',
    effect: 'overwrites',
    path: '/profiles/:id/branches/:branchId/reset',
    summary: 'Move a branch’s head back to an earlier version of its history (no new version; the later ones stay in the profile).',
    errors: ['profile_not_found', 'version_not_in_history'],
    params: BranchParams,
    headers: IfMatch,
    body: z
      .object({ versionId: RefId.describe('The version the branch’s head moves to.') })
      .strict()
      .meta({ id: 'ResetProfileBranchRequest' }),
    response: BranchDetail,
    handler: {
      rpc: 'profiles.resetBranch',
      request: (i) => ({ id: i.params.id, branchId: i.params.branchId, versionId: i.body.versionId, ifMatch: ifMatchOf(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.working.discard',
    method: 'delete',
    path: '/profiles/:id/working-changes',
    summary: 'Discard every staged, uncommitted change of a taste profile; its committed versions stay as they are.',
    errors: ['profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    response: Working,
    handler: { rpc: 'profiles.discardWorkingChanges', request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i) }), response: json },
  }),
  route({
    ...common,
    id: 'profiles.working.stage',
    method: 'post',
    effect: 'updates',
    path: '/profiles/:id/working-changes/:kind',
    summary:
      'Stage one item for the next commit: it replaces a staged item with its id, and on commit the head’s item with its id; {id, "$remove": true} removes one.',
    errors: ['profile_not_found'],
    params: IdParams.extend({ kind: Kind }),
    headers: IfMatch,
    body: z
      .object({ item: z.record(z.string(), z.unknown()).describe('The item; `id` (string or number) identifies it.') })
      .strict()
      .meta({ id: 'StageProfileItemRequest' }),
    response: Working,
    handler: {
      rpc: 'profiles.stageItem',
      request: (i) => ({ id: i.params.id, kind: i.params.kind, ifMatch: ifMatchOf(i), bodyJson: body(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.working.unstage',
    method: 'delete',
    path: '/profiles/:id/working-changes/:kind/:itemId',
    summary: 'Unstage one item (by id) from the working changes (idempotent).',
    errors: ['etag_mismatch', 'profile_not_found'],
    params: IdParams.extend({ kind: Kind, itemId: z.string().min(1).max(200).describe('The staged item’s id.') }),
    headers: IfMatch,
    response: Working,
    handler: {
      rpc: 'profiles.unstageItem',
      request: (i) => ({ id: i.params.id, kind: i.params.kind, itemId: i.params.itemId, ifMatch: ifMatchOf(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.versions.list',
    method: 'get',
    path: '/profiles/:id/versions',
    summary: 'Versions across every branch, newest first, by branch, author, message text or time range, with their authors.',
    errors: ['branch_not_found', 'profile_not_found'],
    params: IdParams,
    query: ListQuery.extend({
      branchId: RefId.optional().describe('Made on this branch.'),
      authorId: z.string().min(1).max(100).optional().describe('Made by this person (user id) or agent (agent id).'),
      q: z.string().min(1).max(200).optional().describe('Text in the message (case-insensitive).'),
      since: z.iso.datetime({ offset: true }).optional().describe('Only versions created at or after this time (ISO 8601).'),
      until: z.iso.datetime({ offset: true }).optional().describe('Only versions created before this time (ISO 8601).'),
    }),
    response: z
      .object({
        versions: z.array(ProfileVersion.extend({ createdBy: Nullable(z.record(z.string(), z.unknown())) })),
        total: z.number().int(),
        nextCursor: Nullable(z.string()),
      })
      .meta({ id: 'ProfileVersionList' }),
    handler: {
      rpc: 'profiles.listVersions',
      request: (i) => ({
        id: i.params.id,
        branchId: i.query.branchId,
        bodyJson: JSON.stringify({
          authorId: i.query.authorId,
          q: i.query.q,
          since: i.query.since,
          until: i.query.until,
          limit: i.query.limit,
          cursor: i.query.cursor,
        }),
      }),
      response: read,
    },
  }),
  route({
    ...common,
    id: 'profiles.search',
    method: 'get',
    path: '/profiles/:id/search',
    summary: 'Items of the current head (or of a version) whose content holds a text, case-insensitive.',
    errors: ['profile_not_found'],
    params: IdParams,
    query: z.object({
      q: z.string().min(1).max(200).describe('Words to look for in the profile’s items.'),
      kind: Kind.optional(),
      versionId: RefId.optional().describe('Search this version instead of the current head.'),
      limit: z.coerce.number().int().min(1).max(200).default(50).describe('How many matches to return at most (1–200; default 50).'),
    }),
    response: z
      .object({
        versionId: Nullable(z.string()),
        items: z.array(z.object({ kind: z.string(), item: z.unknown() })),
        total: z.number().int().describe('How many items match (items holds the first `limit`).'),
      })
      .meta({ id: 'ProfileSearchResult' }),
    handler: {
      rpc: 'profiles.searchItems',
      request: (i) => ({
        id: i.params.id,
        versionId: i.query.versionId,
        bodyJson: JSON.stringify({ q: i.query.q, kind: i.query.kind, limit: i.query.limit }),
      }),
      response: read,
    },
  }),
  route({
    ...common,
    id: 'profiles.stats',
    method: 'get',
    path: '/profiles/:id/stats',
    summary: 'A profile in numbers: versions, branches, authors, the head’s items by kind, staged changes, sizes, first and last commit.',
    errors: ['profile_not_found'],
    params: IdParams,
    response: z
      .object({
        currentBranchId: z.string(),
        headVersionId: Nullable(z.string()),
        versionCount: z.number().int(),
        branchCount: z.number().int(),
        authorCount: z.number().int(),
        items: z.record(z.string(), z.number().int()),
        workingChanges: z.record(z.string(), z.number().int()),
        headSnapshotBytes: z.number().int(),
        historyBytes: z.number().int(),
        firstCommitAt: Nullable(Timestamp),
        lastCommitAt: Nullable(Timestamp),
      })
      .meta({ id: 'ProfileStats' }),
    handler: { rpc: 'profiles.getStats', request: (i) => ({ id: i.params.id }), response: read },
  }),
  route({
    ...common,
    id: 'profiles.duplicate',
    method: 'post',
    effect: 'creates',
    path: '/profiles/:id/duplicate',
    summary: 'Copy a profile with its whole history, branches and working changes into a new profile.',
    errors: ['profile_not_found'],
    params: IdParams,
    body: z
      .object({ name: BranchName.optional().describe('Default: the name with " (copy)".') })
      .strict()
      .meta({ id: 'DuplicateProfileRequest' }),
    response: Profile,
    status: 201,
    handler: { rpc: 'profiles.duplicateProfile', request: (i) => ({ id: i.params.id, bodyJson: body(i) }), response: doc },
  }),
  route({
    ...common,
    id: 'profiles.revert',
    method: 'post',
    effect: 'creates',
    path: '/profiles/:id/revert',
    summary: 'Undo one version: a new version on the branch head reverting what it changed, item by item (409 revert_conflict if changed since).',
    errors: ['changed_concurrently', 'profile_not_found', 'revert_conflict', 'version_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({
        versionId: RefId.describe('The version whose changes are undone by a new version.'),
        branchId: RefId.optional().describe('Default: the current branch.'),
        message: Message.optional(),
      })
      .strict()
      .meta({ id: 'RevertProfileVersionRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      rpc: 'profiles.revertVersion',
      request: (i) => ({ id: i.params.id, versionId: i.body.versionId, branchId: i.body.branchId, ifMatch: ifMatchOf(i), bodyJson: body(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.cherryPick',
    method: 'post',
    effect: 'updates',
    path: '/profiles/:id/cherry-pick',
    summary: 'Apply what one version changed (from its parent) onto a branch head, as a new version (409 cherry_pick_conflict if the items differ).',
    errors: ['changed_concurrently', 'cherry_pick_conflict', 'profile_not_found', 'version_in_history'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({
        versionId: RefId.describe('A version of another branch.'),
        branchId: RefId.optional().describe('The branch it goes onto; default: the current branch.'),
        message: Message.optional().describe('Default: the version’s message.'),
      })
      .strict()
      .meta({ id: 'CherryPickProfileVersionRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      rpc: 'profiles.cherryPick',
      request: (i) => ({ id: i.params.id, versionId: i.body.versionId, branchId: i.body.branchId, ifMatch: ifMatchOf(i), bodyJson: body(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.tags.list',
    method: 'get',
    path: '/profiles/:id/tags',
    summary: 'A profile’s tags (names for versions), oldest first.',
    errors: ['profile_not_found'],
    params: IdParams,
    response: z.object({ tags: z.array(ProfileTag) }).meta({ id: 'ProfileTagList' }),
    handler: { rpc: 'profiles.listTags', request: (i) => ({ id: i.params.id }), response: read },
  }),
  route({
    ...common,
    id: 'profiles.tags.create',
    method: 'post',
    effect: 'creates',
    path: '/profiles/:id/tags',
    summary: 'Name a version (default: the current branch head), e.g. a release; 409 tag_exists for a name in use.',
    errors: ['profile_not_found', 'tag_exists', 'version_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({
        name: TagName,
        versionId: RefId.optional().describe('The version to tag (default: the current branch’s head).'),
        message: Message.optional().describe('A note on the tag.'),
      })
      .strict()
      .meta({ id: 'CreateProfileTagRequest' }),
    response: ProfileTag,
    status: 201,
    handler: {
      rpc: 'profiles.createTag',
      request: (i) => ({ id: i.params.id, versionId: i.body.versionId, ifMatch: ifMatchOf(i), bodyJson: body(i) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.tags.delete',
    method: 'delete',
    path: '/profiles/:id/tags/:name',
    summary: 'Delete a tag (idempotent); its version stays.',
    errors: ['profile_not_found'],
    params: IdParams.extend({ name: TagName }),
    headers: IfMatch,
    response: z.object({ deleted: z.number().int() }).meta({ id: 'DeletedProfileTag' }),
    handler: { rpc: 'profiles.deleteTag', request: (i) => ({ id: i.params.id, itemId: i.params.name, ifMatch: ifMatchOf(i) }), response: json },
  }),
];
