import { DomainError, parseInput } from '@svc/kit';
import { z } from 'zod';

/**
 * Input shapes, checked again here (the gateway checks them first): a malformed body is a 400
 * with the field named; a well-formed body that would corrupt history is a 422 (history.ts).
 */

export const LIMITS = {
  name: 200,
  message: 10_000,
  description: 2_000,
  branches: 1_000,
  versions: 100_000,
  items: 100_000,
};

/** Version and branch ids: client-chosen in PATCH (`ver_…`, `br_…` when the server makes them). */
export const RefId = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/@-]*$/, 'may hold letters, digits and _ . : / @ - only');

export const ProjectId = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'may hold letters, digits and _ . : - only');

/** Items are checked as plain objects only (cheap for 10,000 of them) and kept as sent. */
const Item = z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
  message: 'must be an object',
});
const Items = z.array(Item).max(LIMITS.items);
const Scores = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * Validates `shape` but answers the input itself (a record), so that a snapshot keeps its keys in
 * the order they were sent: what is committed comes back exactly.
 */
export function keepingOrder(shape: z.ZodType) {
  return z.record(z.string(), z.unknown(), { error: 'must be an object' }).superRefine((value, ctx) => {
    const r = shape.safeParse(value);
    if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  });
}

const SnapshotShape = z.looseObject({
  constraints: Items.optional(),
  exemplars: Items.optional(),
  comparisons: Items.optional(),
  latentScores: Scores.optional(),
});

/** A snapshot: the item arrays, latentScores and any computed data (kept as sent). */
export const SnapshotIn = keepingOrder(SnapshotShape);
export const WorkingChangesIn = keepingOrder(SnapshotShape);

const Timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });
const BranchName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(LIMITS.name)
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not hold control characters');

export const VersionIn = z
  .object({
    id: RefId,
    branchId: RefId.optional(),
    parentVersionId: RefId.nullable().optional(),
    message: z.string().max(LIMITS.message).optional(),
    snapshot: SnapshotIn.optional(),
    createdAt: Timestamp.optional(),
  })
  .strict();

export const BranchIn = z
  .object({
    id: RefId,
    name: BranchName.optional(),
    description: z.string().max(LIMITS.description).nullable().optional(),
    headVersionId: RefId.nullable().optional(),
    parentBranchId: RefId.nullable().optional(),
    createdAt: z.string().max(64).optional(),
  })
  .strict();

export const ProfileDataIn = z
  .object({
    versions: z.array(VersionIn).max(LIMITS.versions).optional(),
    branches: z.array(BranchIn).max(LIMITS.branches).optional(),
    currentBranchId: RefId.optional(),
    workingChanges: WorkingChangesIn.optional(),
  })
  .strict();

const ProfileName = z.string().trim().min(1, 'must not be empty').max(LIMITS.name);

export const CreateProfileIn = z
  .object({
    name: ProfileName.optional(),
    projectId: ProjectId.optional(),
    profileData: ProfileDataIn.optional(),
  })
  .strict();

/** PATCH: the GET shape is accepted back; its read-only fields are ignored. */
export const ProfilePatchIn = z
  .object({
    name: ProfileName.optional(),
    profileData: ProfileDataIn.optional(),
    effectiveSnapshot: z.unknown().optional(),
    id: z.string().optional(),
    projectId: z.unknown().optional(),
    createdAt: z.unknown().optional(),
    updatedAt: z.unknown().optional(),
  })
  .strict();

const Side = z.enum(['ours', 'theirs']);
const SideMap = z.record(z.string(), Side);
export const MergeIn = z
  .object({
    sourceBranchId: RefId,
    targetBranchId: RefId.optional(),
    message: z.string().max(LIMITS.message).optional(),
    dryRun: z.boolean().optional(),
    strategy: Side.optional(),
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
  .strict();

export const Message = z.string().max(LIMITS.message);

/** Parses with a schema; a failure is a 400 whose message names the field. */
export function parse<T extends z.ZodType>(schema: T, value: unknown, where = 'body'): z.infer<T> {
  return parseInput(schema, value, { where });
}

export function parseJson(text: string, where = 'body'): unknown {
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_json', `${where} is not valid JSON.`);
  }
}
