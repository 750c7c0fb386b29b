import { z } from 'zod';

import type { profiles } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, ProjectId, reply, route, type RouteInput, Success, Timestamp } from '../../route.js';
import {
  CreateProfileBody,
  MergeProfileBody as MergeBody,
  PatchProfileBody,
  ProfileBranchName as BranchName,
  ProfileMergeSide as Side,
  ProfileMessage as Message,
  ProfileRefId as RefId,
  ProfileSnapshot,
  ProfileWorkingChanges as WorkingChanges,
} from '../../schemas/profiles.js';

/**
 * Taste profiles (issue 6): a profile, its versions (immutable commits) and branches, working
 * changes, and the effective snapshot. PATCH replaces arrays as sent; the profiles service refuses
 * (422) whatever would corrupt history. Every write honours If-Match and answers the new ETag.
 * The input shapes the service checks too are in ../schemas/profiles.ts; the answers' are here.
 */

export const ProfileId = prefixedId('prof', 'a profile id');

export const ProfileVersion = z
  .object({
    id: z.string(),
    branchId: z.string(),
    parentVersionId: Nullable(z.string()),
    message: z.string(),
    snapshot: ProfileSnapshot.optional().describe('Absent in history listings (and in GET when the snapshots are large).'),
    createdAt: Timestamp,
  })
  .meta({ id: 'ProfileVersion' });

export const ProfileBranch = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().optional(),
    headVersionId: Nullable(z.string()),
    parentBranchId: z.string().optional(),
    createdAt: Timestamp,
  })
  .meta({ id: 'ProfileBranch' });

export const Profile = z
  .object({
    id: z.string(),
    name: z.string(),
    projectId: Nullable(z.string()),
    profileData: z.object({
      versions: z.array(ProfileVersion),
      branches: z.array(ProfileBranch),
      currentBranchId: z.string(),
      workingChanges: WorkingChanges,
    }),
    effectiveSnapshot: ProfileSnapshot.describe("The current branch head's snapshot; {} while that head is null."),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Profile' });

export const ProfileSummary = z
  .object({
    id: z.string(),
    name: z.string(),
    projectId: Nullable(z.string()),
    currentBranchId: z.string(),
    versionCount: z.number().int(),
    branchCount: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    etag: z.string(),
  })
  .meta({ id: 'ProfileSummary' });

const ItemDiff = z.object({
  added: z.array(z.unknown()),
  removed: z.array(z.unknown()),
  changed: z.array(z.object({ id: z.unknown(), from: z.unknown(), to: z.unknown() })),
});
const SnapshotDiff = z
  .object({
    constraints: ItemDiff,
    exemplars: ItemDiff,
    comparisons: ItemDiff,
    latentScores: z.object({
      added: z.record(z.string(), z.unknown()),
      removed: z.record(z.string(), z.unknown()),
      changed: z.record(z.string(), z.object({ from: z.unknown(), to: z.unknown() })),
    }),
  })
  .meta({ id: 'ProfileSnapshotDiff' });

export const MergeResult = z
  .object({
    sourceBranchId: z.string(),
    targetBranchId: z.string(),
    mergeBaseVersionId: Nullable(z.string()),
    dryRun: z.boolean(),
    merged: z.boolean(),
    upToDate: z.boolean(),
    conflicts: z.array(
      z.object({
        kind: z.enum(['constraints', 'exemplars', 'comparisons', 'latentScores']),
        id: z.unknown(),
        base: z.unknown(),
        ours: z.unknown(),
        theirs: z.unknown(),
        resolution: Nullable(Side),
      }),
    ),
    conflictsOmitted: z
      .number()
      .int()
      .describe('Conflicts not listed: the answer lists them up to about 1 MiB of JSON (a 409 lists the first 100, with conflictCount).'),
    version: Nullable(ProfileVersion),
    changes: Nullable(SnapshotDiff).describe('What the merge does to the target head, per item; null when up to date, or when omitted.'),
    changesOmitted: z.boolean().describe('True when the changes pass about 4 MiB of JSON and are left out: read them with GET …/diff.'),
  })
  .meta({ id: 'ProfileMergeResult' });

export const IfMatch = z.object({
  'if-match': z.string().max(2000).optional().describe('The ETag last read; a stale one answers 412.'),
});
const SnapshotsQuery = z.object({
  snapshots: z.enum(['true', 'false']).optional().describe("Include every version's snapshot: default when they total at most 1 MB."),
});
export const IdParams = z.object({ id: ProfileId });

const snapshotsOf = (i: RouteInput<unknown, { snapshots?: 'true' | 'false' }>) =>
  i.query.snapshots === undefined ? undefined : i.query.snapshots === 'true';
export const ifMatchOf = (i: RouteInput<unknown, unknown, unknown, { 'if-match'?: string }>) => i.headers['if-match'];
export const etagged = (body: unknown, etag: string, status?: number) => reply(body, { status, headers: etag ? { ETag: etag } : {} });
/**
 * The service's JSON text as the answer, as it is: the front sends it without parsing it and
 * serialising it again (a profile's snapshots, a diff of thousands of items: most of the cost of
 * such an answer was that round trip through objects); a front that needs the value parses it.
 */
export const jsonText = (text: string, etag = '', status?: number) => reply(undefined, { json: text, status, headers: etag ? { ETag: etag } : {} });
export const doc = (res: profiles.ProfileReply) => jsonText(res.profileJson, res.etag);
export const json = (res: profiles.JsonReply) => jsonText(res.json, res.etag);

export const common = { tag: 'profiles', auth: 'key' as const, principals: ['human' as const, 'agent' as const], authority: false };

export const profilesRoutes = [
  route({
    ...common,
    id: 'profiles.list',
    method: 'get',
    path: '/profiles',
    summary: 'List the account’s taste profiles, newest first, with their names and current branches.',
    query: ListQuery.extend({ projectId: ProjectId.optional() }),
    response: z.object({ profiles: z.array(ProfileSummary), nextCursor: Nullable(z.string()) }).meta({ id: 'ProfileList' }),
    handler: {
      rpc: 'profiles.listProfiles',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor, projectId: i.query.projectId }),
      response: (res) => ({
        profiles: res.profiles.map((p) => ({ ...p, projectId: p.projectId ?? null })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'profiles.create',
    method: 'post',
    effect: 'creates',
    path: '/profiles',
    summary: 'Create a taste profile (with the branch main and no versions, unless profileData imports a history).',
    body: CreateProfileBody,
    response: Profile,
    status: 201,
    handler: {
      rpc: 'profiles.createProfile',
      request: (i) => ({ bodyJson: JSON.stringify(i.body) }),
      response: (res) => {
        const body = JSON.parse(res.profileJson) as z.input<typeof Profile>;
        return reply(body, { headers: { ETag: res.etag, Location: `/v1/profiles/${body.id}` } });
      },
    },
  }),
  route({
    ...common,
    id: 'profiles.get',
    method: 'get',
    path: '/profiles/:id',
    summary: 'Get a taste profile (its branches, versions and staged changes) with its ETag for a later write.',
    errors: ['account_not_found', 'profile_not_found'],
    params: IdParams,
    query: SnapshotsQuery,
    response: Profile,
    handler: {
      rpc: 'profiles.getProfile',
      request: (i) => ({ id: i.params.id, snapshots: snapshotsOf(i) }),
      response: doc,
    },
  }),
  route({
    ...common,
    id: 'profiles.update',
    statuses: {
      422: 'The change would break the resource’s rules (`version_parent_mismatch`, `version_immutable`, `version_dropped`, `head_other_branch`, `head_not_found`, `duplicate_version_id`, `duplicate_branch_id`, `branch_parent_missing`, `main_branch_required`).',
    },
    method: 'patch',
    effect: 'updates',
    path: '/profiles/:id',
    summary: 'Update a taste profile (If-Match); answers the updated profile and its new ETag. 422 when it would corrupt history.',
    errors: [
      'branch_parent_missing',
      'duplicate_branch_id',
      'duplicate_version_id',
      'etag_mismatch',
      'head_not_found',
      'head_other_branch',
      'main_branch_required',
      'profile_not_found',
      'version_dropped',
      'version_immutable',
      'version_parent_mismatch',
    ],
    params: IdParams,
    query: SnapshotsQuery,
    headers: IfMatch,
    body: PatchProfileBody,
    // The spec's PATCH commit resends every version: about 1.2 MB for 10k items and 1,000 versions.
    bodyLimit: '16mb',
    response: Profile,
    handler: {
      rpc: 'profiles.updateProfile',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), patchJson: JSON.stringify(i.body), snapshots: snapshotsOf(i) }),
      response: doc,
    },
  }),
  route({
    ...common,
    id: 'profiles.delete',
    method: 'delete',
    path: '/profiles/:id',
    summary: 'Delete a taste profile and its history (If-Match).',
    errors: ['etag_mismatch', 'profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    response: Success,
    handler: {
      rpc: 'profiles.deleteProfile',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i) }),
      response: () => ({ success: true as const }),
    },
  }),
  route({
    ...common,
    id: 'profiles.commit',
    method: 'post',
    effect: 'creates',
    path: '/profiles/:id/commits',
    summary: 'Commit the working changes to a branch (default: the current one) and clear them; answers the new version.',
    errors: ['etag_mismatch', 'profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({ message: Message, branchId: RefId.optional().describe('The branch to commit on (default: the current branch).') })
      .strict()
      .meta({ id: 'CommitProfileRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      rpc: 'profiles.commit',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), message: i.body.message, branchId: i.body.branchId }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.createBranch',
    method: 'post',
    effect: 'creates',
    path: '/profiles/:id/branches',
    summary: "Create a branch at its parent's head (default parent: the current branch); answers the branch.",
    errors: ['branch_name_taken', 'profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({
        name: BranchName,
        description: z.string().max(2000).optional().describe('What the branch is for (at most 2,000 characters).'),
        parentBranchId: RefId.optional().describe('The branch it starts from, at its head (default: the current branch).'),
      })
      .strict()
      .meta({ id: 'CreateProfileBranchRequest' }),
    response: ProfileBranch,
    status: 201,
    handler: {
      rpc: 'profiles.createBranch',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), ...i.body }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.deleteBranch',
    statuses: { 422: 'The change would break the resource’s rules (`main_branch_required`).' },
    method: 'delete',
    path: '/profiles/:id/branches/:branchId',
    summary: 'Delete a branch (not main, not the current one, not a parent); its versions stay.',
    errors: ['main_branch_required', 'profile_not_found'],
    params: IdParams.extend({ branchId: RefId.describe('The branch’s id.') }),
    headers: IfMatch,
    response: Success,
    handler: {
      rpc: 'profiles.deleteBranch',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), branchId: i.params.branchId }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.checkout',
    method: 'post',
    effect: 'overwrites',
    path: '/profiles/:id/checkout',
    summary: 'Switch branch: the effective snapshot follows it, working changes carry along; answers the profile.',
    errors: ['profile_not_found'],
    params: IdParams,
    query: SnapshotsQuery,
    headers: IfMatch,
    body: z
      .object({ branchId: RefId.describe('The branch to make current.') })
      .strict()
      .meta({ id: 'CheckoutProfileRequest' }),
    response: Profile,
    handler: {
      rpc: 'profiles.checkout',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), branchId: i.body.branchId, snapshots: snapshotsOf(i) }),
      response: doc,
    },
  }),
  route({
    ...common,
    id: 'profiles.rollback',
    method: 'post',
    effect: 'overwrites',
    path: '/profiles/:id/rollback',
    summary: "Roll back: a new version on the branch's head restoring an earlier version's state (history kept).",
    errors: ['profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({
        versionId: RefId.describe('The version whose content becomes the branch’s new head.'),
        branchId: RefId.optional().describe('Default: the current branch.'),
        message: Message.optional(),
      })
      .strict()
      .meta({ id: 'RollbackProfileRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      rpc: 'profiles.rollback',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), ...i.body }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.merge',
    method: 'post',
    effect: 'updates',
    path: '/profiles/:id/merge',
    summary: 'Three-way merge of a branch into another, item by item, with ours/theirs resolutions and a dry run (409 on open conflicts).',
    errors: ['changed_concurrently', 'merge_conflict', 'profile_not_found'],
    params: IdParams,
    headers: IfMatch,
    body: MergeBody,
    response: MergeResult,
    handler: {
      rpc: 'profiles.merge',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), bodyJson: JSON.stringify(i.body) }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.log',
    method: 'get',
    path: '/profiles/:id/log',
    summary: "A branch's history (default: the current branch), newest first, without snapshots.",
    errors: ['profile_not_found'],
    params: IdParams,
    query: ListQuery.extend({ branchId: RefId.optional().describe('The branch whose history to list (default: the current branch).') }),
    response: z.object({ branchId: z.string(), versions: z.array(ProfileVersion), nextCursor: Nullable(z.string()) }).meta({ id: 'ProfileLog' }),
    handler: {
      rpc: 'profiles.getLog',
      request: (i) => ({ id: i.params.id, branchId: i.query.branchId, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => jsonText(res.json),
    },
  }),
  route({
    ...common,
    id: 'profiles.diff',
    statuses: {
      413: 'The difference is more than about 4 MiB of JSON (`diff_too_large`, with `maxBytes`): compare nearer versions, or read the versions themselves.',
    },
    method: 'get',
    path: '/profiles/:id/diff',
    summary: 'Per-item difference (added, removed, changed) between two versions or branch heads.',
    errors: ['profile_not_found', 'diff_too_large'],
    params: IdParams,
    query: z.object({
      from: RefId.optional().describe('A version or branch id; default: the parent of `to`.'),
      to: RefId.optional().describe('A version or branch id; default: the current branch head.'),
    }),
    response: SnapshotDiff.extend({ from: Nullable(z.string()), to: Nullable(z.string()) }),
    handler: {
      rpc: 'profiles.getDiff',
      request: (i) => ({ id: i.params.id, from: i.query.from, to: i.query.to }),
      response: (res) => jsonText(res.json),
    },
  }),
  route({
    ...common,
    id: 'profiles.getVersion',
    method: 'get',
    path: '/profiles/:id/versions/:versionId',
    summary: 'One committed version of a taste profile with its full snapshot, message, author and parent.',
    errors: ['profile_not_found'],
    params: IdParams.extend({ versionId: RefId.describe('The version’s id.') }),
    response: ProfileVersion,
    handler: {
      rpc: 'profiles.getVersion',
      request: (i) => ({ id: i.params.id, versionId: i.params.versionId }),
      response: (res) => jsonText(res.json),
    },
  }),
];
