import { z } from 'zod';

import { ListQuery, Nullable, prefixedId, ProjectId, reply, route, type RouteInput, Success, Timestamp } from '../route.js';

/**
 * Taste profiles (issue 6): a profile, its versions (immutable commits) and branches, working
 * changes, and the effective snapshot. PATCH replaces arrays as sent; the profiles service refuses
 * (422) whatever would corrupt history. Every write honours If-Match and answers the new ETag.
 */

const ProfileId = prefixedId('prof', 'a profile id');
const RefId = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/@-]*$/, 'may hold letters, digits and _ . : / @ - only');
const Message = z.string().max(10_000);
const BranchName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200)
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not hold control characters');

/** Checked as a plain object only (cheap for 10,000 items), and passed on as is. */
const Item = z
  .custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), { message: 'must be an object' })
  .meta({ type: 'object', description: 'An item; `id` (string or number) identifies it in diffs, merges and working changes.' });
const Items = z.array(Item).max(100_000);
const Scores = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * Validates `shape` but passes the input itself on (a record), so that snapshots keep their keys in
 * the order sent; the documented schema is the shape's.
 */
function keepingOrder(shape: z.ZodObject, meta: { id: string; description: string }) {
  const doc = z.toJSONSchema(shape, { io: 'input', unrepresentable: 'any' }) as { properties?: unknown };
  return z
    .record(z.string(), z.unknown(), { error: 'must be an object' })
    .superRefine((value, ctx) => {
      const r = shape.safeParse(value);
      if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    })
    .meta({ ...meta, properties: doc.properties });
}

export const ProfileSnapshot = keepingOrder(
  z.looseObject({
    constraints: Items.optional().describe('Question-and-answer rules.'),
    exemplars: Items.optional().describe('Labeled reference images (label good or bad).'),
    comparisons: Items.optional().describe('Pairwise preferences between frames.'),
    latentScores: Scores.optional(),
    embeddingCentroids: z.unknown().optional().describe('Computed at commit: centroids of the good and bad exemplar embeddings.'),
    promptSummary: z.unknown().optional().describe('Computed at commit: a summary of the constraints.'),
  }),
  { id: 'ProfileSnapshot', description: 'A complete state, kept exactly as committed (other keys too).' },
);

export const WorkingChanges = keepingOrder(
  z.looseObject({
    constraints: Items.optional(),
    exemplars: Items.optional(),
    comparisons: Items.optional(),
    latentScores: Scores.optional(),
  }),
  {
    id: 'ProfileWorkingChanges',
    description:
      'Uncommitted changes, per profile. A commit applies them to the head: an item whose id matches a committed one replaces it, ' +
      '`{"id": …, "$remove": true}` removes it, other items are appended.',
  },
);

const Iso = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });

export const ProfileVersionIn = z
  .object({
    id: RefId,
    branchId: RefId.optional(),
    parentVersionId: RefId.nullable().optional(),
    message: Message.optional(),
    snapshot: ProfileSnapshot.optional(),
    createdAt: Iso.optional(),
  })
  .strict()
  .meta({ id: 'PatchVersion' });

export const ProfileBranchIn = z
  .object({
    id: RefId,
    name: BranchName.optional(),
    description: z.string().max(2000).nullable().optional(),
    headVersionId: RefId.nullable().optional(),
    parentBranchId: RefId.nullable().optional(),
    createdAt: z.string().max(64).optional(),
  })
  .strict()
  .meta({ id: 'PatchBranch' });

const ProfileDataIn = z
  .object({
    versions: z.array(ProfileVersionIn).max(100_000).optional().describe('Every version, all branches (committed ones unchanged).'),
    branches: z.array(ProfileBranchIn).max(1000).optional(),
    currentBranchId: RefId.optional(),
    workingChanges: WorkingChanges.optional(),
  })
  .strict();

const ProfileName = z.string().trim().min(1, 'must not be empty').max(200);

export const CreateProfileBody = z
  .object({
    name: ProfileName.optional().describe('Default "Untitled profile".'),
    projectId: ProjectId.optional(),
    profileData: ProfileDataIn.optional().describe('Optional initial history (an import), checked as a PATCH would be.'),
  })
  .strict()
  .meta({ id: 'CreateProfileRequest' });

export const PatchProfileBody = z
  .object({
    name: ProfileName.optional(),
    profileData: ProfileDataIn.optional(),
    effectiveSnapshot: z.unknown().optional().describe('Accepted and ignored: the server recomputes it from the current branch head.'),
    id: z.string().optional().describe('Read-only (must be the profile id if sent).'),
    projectId: z.unknown().optional().describe('Read-only; ignored.'),
    createdAt: z.unknown().optional().describe('Read-only; ignored.'),
    updatedAt: z.unknown().optional().describe('Read-only; ignored.'),
  })
  .strict()
  .meta({ id: 'PatchProfileRequest' });

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

const Side = z.enum(['ours', 'theirs']);
const SideMap = z.record(z.string(), Side).describe('Item id (or latentScores key) → ours | theirs.');

export const MergeBody = z
  .object({
    sourceBranchId: RefId,
    targetBranchId: RefId.optional().describe('Default: the current branch.'),
    message: Message.optional(),
    dryRun: z.boolean().optional().describe('Preview the merge and its conflicts; change nothing.'),
    strategy: Side.optional().describe('How to resolve the conflicts not named in resolutions.'),
    resolutions: z
      .object({
        constraints: SideMap.optional(),
        exemplars: SideMap.optional(),
        comparisons: SideMap.optional(),
        latentScores: SideMap.optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .meta({ id: 'MergeProfileRequest' });

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
    version: Nullable(ProfileVersion),
    changes: Nullable(SnapshotDiff),
  })
  .meta({ id: 'ProfileMergeResult' });

const IfMatch = z.object({
  'if-match': z.string().max(2000).optional().describe('The ETag last read; a stale one answers 412.'),
});
const SnapshotsQuery = z.object({
  snapshots: z
    .enum(['true', 'false'])
    .optional()
    .describe("Include every version's snapshot: default when they total at most 1 MB."),
});
const IdParams = z.object({ id: ProfileId });

const snapshotsOf = (i: RouteInput) => (i.query.snapshots === undefined ? undefined : i.query.snapshots === 'true');
const ifMatchOf = (i: RouteInput) => i.headers['if-match'] as string | undefined;
const etagged = (body: unknown, etag: string, status?: number) => reply(body, { status, headers: etag ? { ETag: etag } : {} });
const doc = (res: { profileJson: string; etag: string }) => etagged(JSON.parse(res.profileJson), res.etag);
const json = (res: { json: string; etag: string }) => etagged(JSON.parse(res.json), res.etag);

const common = { tag: 'profiles', auth: 'key' as const, principals: ['human' as const, 'agent' as const], authority: false };

export const profilesRoutes = [
  route({
    ...common,
    id: 'profiles.list',
    method: 'get',
    path: '/profiles',
    summary: 'List taste profiles (newest first).',
    query: ListQuery.extend({ projectId: ProjectId.optional() }),
    response: z.object({ profiles: z.array(ProfileSummary), nextCursor: Nullable(z.string()) }).meta({ id: 'ProfileList' }),
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'listProfiles',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor, projectId: i.query.projectId }),
      response: (res: { profiles: Array<Record<string, unknown>>; nextCursor?: string }) => ({
        profiles: res.profiles.map((p) => ({ ...p, projectId: p.projectId ?? null })),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    ...common,
    id: 'profiles.create',
    method: 'post',
    path: '/profiles',
    summary: 'Create a taste profile (with the branch main and no versions, unless profileData imports a history).',
    body: CreateProfileBody,
    response: Profile,
    status: 201,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'createProfile',
      request: (i) => ({ bodyJson: JSON.stringify(i.body) }),
      response: (res: { profileJson: string; etag: string }) => {
        const body = JSON.parse(res.profileJson) as { id: string };
        return reply(body, { headers: { ETag: res.etag, Location: `/v1/profiles/${body.id}` } });
      },
    },
  }),
  route({
    ...common,
    id: 'profiles.get',
    method: 'get',
    path: '/profiles/:id',
    summary: 'Get a taste profile with its ETag.',
    params: IdParams,
    query: SnapshotsQuery,
    response: Profile,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'getProfile',
      request: (i) => ({ id: i.params.id, snapshots: snapshotsOf(i) }),
      response: doc,
    },
  }),
  route({
    ...common,
    id: 'profiles.update',
    method: 'patch',
    path: '/profiles/:id',
    summary: 'Update a taste profile (If-Match); answers the updated profile and its new ETag. 422 when it would corrupt history.',
    params: IdParams,
    query: SnapshotsQuery,
    headers: IfMatch,
    body: PatchProfileBody,
    // The spec's PATCH commit resends every version: about 1.2 MB for 10k items and 1,000 versions.
    bodyLimit: '16mb',
    response: Profile,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'updateProfile',
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
    params: IdParams,
    headers: IfMatch,
    response: Success,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'deleteProfile',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i) }),
      response: () => ({ success: true as const }),
    },
  }),
  route({
    ...common,
    id: 'profiles.commit',
    method: 'post',
    path: '/profiles/:id/commits',
    summary: 'Commit the working changes to a branch (default: the current one) and clear them; answers the new version.',
    params: IdParams,
    headers: IfMatch,
    body: z.object({ message: Message, branchId: RefId.optional() }).strict().meta({ id: 'CommitProfileRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'commit',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), message: i.body.message, branchId: i.body.branchId }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.createBranch',
    method: 'post',
    path: '/profiles/:id/branches',
    summary: "Create a branch at its parent's head (default parent: the current branch); answers the branch.",
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({ name: BranchName, description: z.string().max(2000).optional(), parentBranchId: RefId.optional() })
      .strict()
      .meta({ id: 'CreateProfileBranchRequest' }),
    response: ProfileBranch,
    status: 201,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'createBranch',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), ...i.body }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.deleteBranch',
    method: 'delete',
    path: '/profiles/:id/branches/:branchId',
    summary: 'Delete a branch (not main, not the current one, not a parent); its versions stay.',
    params: IdParams.extend({ branchId: RefId }),
    headers: IfMatch,
    response: Success,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'deleteBranch',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), branchId: i.params.branchId }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.checkout',
    method: 'post',
    path: '/profiles/:id/checkout',
    summary: 'Switch branch: the effective snapshot follows it, working changes carry along; answers the profile.',
    params: IdParams,
    query: SnapshotsQuery,
    headers: IfMatch,
    body: z.object({ branchId: RefId }).strict().meta({ id: 'CheckoutProfileRequest' }),
    response: Profile,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'checkout',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), branchId: i.body.branchId, snapshots: snapshotsOf(i) }),
      response: doc,
    },
  }),
  route({
    ...common,
    id: 'profiles.rollback',
    method: 'post',
    path: '/profiles/:id/rollback',
    summary: "Roll back: a new version on the branch's head restoring an earlier version's state (history kept).",
    params: IdParams,
    headers: IfMatch,
    body: z
      .object({ versionId: RefId, branchId: RefId.optional(), message: Message.optional() })
      .strict()
      .meta({ id: 'RollbackProfileRequest' }),
    response: ProfileVersion,
    status: 201,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'rollback',
      request: (i) => ({ id: i.params.id, ifMatch: ifMatchOf(i), ...i.body }),
      response: json,
    },
  }),
  route({
    ...common,
    id: 'profiles.merge',
    method: 'post',
    path: '/profiles/:id/merge',
    summary: 'Three-way merge of a branch into another, item by item, with ours/theirs resolutions and a dry run (409 on open conflicts).',
    params: IdParams,
    headers: IfMatch,
    body: MergeBody,
    response: MergeResult,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'merge',
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
    params: IdParams,
    query: ListQuery.extend({ branchId: RefId.optional() }),
    response: z
      .object({ branchId: z.string(), versions: z.array(ProfileVersion), nextCursor: Nullable(z.string()) })
      .meta({ id: 'ProfileLog' }),
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'getLog',
      request: (i) => ({ id: i.params.id, branchId: i.query.branchId, limit: i.query.limit, cursor: i.query.cursor }),
      response: (res: { json: string }) => JSON.parse(res.json),
    },
  }),
  route({
    ...common,
    id: 'profiles.diff',
    method: 'get',
    path: '/profiles/:id/diff',
    summary: 'Per-item difference (added, removed, changed) between two versions or branch heads.',
    params: IdParams,
    query: z.object({
      from: RefId.optional().describe('A version or branch id; default: the parent of `to`.'),
      to: RefId.optional().describe('A version or branch id; default: the current branch head.'),
    }),
    response: SnapshotDiff.extend({ from: Nullable(z.string()), to: Nullable(z.string()) }),
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'getDiff',
      request: (i) => ({ id: i.params.id, from: i.query.from, to: i.query.to }),
      response: (res: { json: string }) => JSON.parse(res.json),
    },
  }),
  route({
    ...common,
    id: 'profiles.getVersion',
    method: 'get',
    path: '/profiles/:id/versions/:versionId',
    summary: 'One version with its snapshot.',
    params: IdParams.extend({ versionId: RefId }),
    response: ProfileVersion,
    handler: {
      kind: 'rpc',
      service: 'profiles',
      method: 'getVersion',
      request: (i) => ({ id: i.params.id, versionId: i.params.versionId }),
      response: (res: { json: string }) => JSON.parse(res.json),
    },
  }),
];
