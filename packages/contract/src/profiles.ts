import { z } from 'zod';

import { visibleName } from '@svc/kit';

import { ProjectId } from './common.js';

/**
 * The input shapes of taste profiles, declared once: the gateway validates requests with them
 * (routes/profiles/profiles.ts) and the profiles service checks them again with the same schemas (a
 * malformed body is a 400 naming the field; a well-formed one that would corrupt history is the
 * service's 422).
 */

/** Sizes a profile's input may have; the profiles service enforces the history ones too. */
export const PROFILE_LIMITS = {
  name: 200,
  message: 10_000,
  description: 2_000,
  branches: 1_000,
  versions: 100_000,
  items: 100_000,
};

/** Version and branch ids: client-chosen in PATCH (`ver_…`, `br_…` when the server makes them). */
export const ProfileRefId = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/@-]*$/, 'may hold letters, digits and _ . : / @ - only');
export const ProfileMessage = z.string().max(PROFILE_LIMITS.message).describe('A message for the new version, as in a commit log.');
export const ProfileBranchName = visibleName(z.string().trim().min(1, 'must not be empty').max(PROFILE_LIMITS.name)).describe(
  'The branch’s name, unique in the profile.',
);

/** Checked as a plain object only (cheap for 10,000 items), and passed on as is. */
const Item = z
  .custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), { message: 'must be an object' })
  .meta({ type: 'object', description: 'An item; `id` (string or number) identifies it in diffs, merges and working changes.' });
const Items = z.array(Item).max(PROFILE_LIMITS.items);
const Scores = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * Validates `shape` but passes the input itself on (a record), so that snapshots keep their keys in
 * the order sent: what is committed comes back exactly. The documented schema is the shape's.
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

/** A snapshot: the item arrays, latentScores and any computed data (kept as sent). */
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

export const ProfileWorkingChanges = keepingOrder(
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
    id: ProfileRefId,
    branchId: ProfileRefId.optional(),
    parentVersionId: ProfileRefId.nullable().optional(),
    message: ProfileMessage.optional(),
    snapshot: ProfileSnapshot.optional(),
    createdAt: Iso.optional(),
  })
  .strict()
  .meta({ id: 'PatchVersion' });

export const ProfileBranchIn = z
  .object({
    id: ProfileRefId,
    name: ProfileBranchName.optional(),
    description: z.string().max(PROFILE_LIMITS.description).nullable().optional(),
    headVersionId: ProfileRefId.nullable().optional(),
    parentBranchId: ProfileRefId.nullable().optional(),
    createdAt: z.string().max(64).optional(),
  })
  .strict()
  .meta({ id: 'PatchBranch' });

export const ProfileDataIn = z
  .object({
    versions: z.array(ProfileVersionIn).max(PROFILE_LIMITS.versions).optional().describe('Every version, all branches (committed ones unchanged).'),
    branches: z.array(ProfileBranchIn).max(PROFILE_LIMITS.branches).optional().describe('Every branch, with its head version.'),
    currentBranchId: ProfileRefId.optional().describe('The branch checked out (one of branches).'),
    workingChanges: ProfileWorkingChanges.optional().describe('The staged changes not yet committed, per kind.'),
  })
  .strict()
  .describe('The profile’s history: versions, branches, the current branch and the staged changes (the GET shape).');

/** A PATCH's (or an import's) profileData, as validated. */
export type ProfileDataInput = z.output<typeof ProfileDataIn>;

const ProfileName = visibleName(z.string().trim().min(1, 'must not be empty').max(PROFILE_LIMITS.name)).describe('The profile’s name.');

export const CreateProfileBody = z
  .object({
    name: ProfileName.optional().describe('Default "Untitled profile".'),
    projectId: ProjectId.optional(),
    profileData: ProfileDataIn.optional().describe('Optional initial history (an import), checked as a PATCH would be.'),
  })
  .strict()
  .meta({ id: 'CreateProfileRequest' });

/** PATCH: the GET shape is accepted back; its read-only fields are ignored. */
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

export const ProfileMergeSide = z.enum(['ours', 'theirs']);
const SideMap = z.record(z.string(), ProfileMergeSide).describe('Item id (or latentScores key) → ours | theirs.');

export const MergeProfileBody = z
  .object({
    sourceBranchId: ProfileRefId.describe('The branch whose changes are merged in.'),
    targetBranchId: ProfileRefId.optional().describe('Default: the current branch.'),
    message: ProfileMessage.optional(),
    dryRun: z.boolean().optional().describe('Preview the merge and its conflicts; change nothing.'),
    strategy: ProfileMergeSide.optional().describe('How to resolve the conflicts not named in resolutions.'),
    resolutions: z
      .object({
        constraints: SideMap.optional(),
        exemplars: SideMap.optional(),
        comparisons: SideMap.optional(),
        latentScores: SideMap.optional(),
      })
      .strict()
      .optional()
      .describe('Per kind, how each named conflict is resolved: keep ours (the target) or take theirs (the source).'),
  })
  .strict()
  .meta({ id: 'MergeProfileRequest' });
