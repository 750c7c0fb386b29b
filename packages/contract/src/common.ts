import { z } from 'zod';

import { scopeIdProblem, visibleName } from '@svc/kit';

/**
 * The schemas every part of the contract shares: the error body, timestamps, pages, ids, names.
 * The route table validates requests with them and documents answers; the services validate their
 * gRPC input with the same ones.
 */

/** How deeply JSON input may nest (arrays and objects); deeper input is refused with a 400 by every front and service. */
export const MAX_JSON_DEPTH = 64;

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().describe('Stable snake_case error code.'),
      message: z.string().describe('A human sentence.'),
      requestId: z.string(),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('What more the error knows, where it has something to add (a 412’s current version, a merge’s conflicts).'),
    }),
  })
  .meta({ id: 'Error' });

export const Timestamp = z.string().describe('ISO 8601 UTC with milliseconds');
export const Nullable = <T extends z.ZodType>(t: T) => t.nullable().default(null as never);

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Items per page.'),
  cursor: z.string().max(200).optional().describe('The last page’s `nextCursor`.'),
});

export const Success = z.object({ success: z.literal(true) });

/** The headers of a list that is also a live stream (SSE): where a reconnecting client resumes. */
export const StreamHeaders = z.object({
  'last-event-id': z
    .string()
    .regex(/^\d{1,15}$/, 'must be a seq')
    .optional()
    .describe('For the live stream: the seq of the last event you have (a reconnecting EventSource sends it); the stream resumes after it.'),
});

/** An id of one type (DESIGN §3): `<prefix>_` + 26 lowercase base32 characters. */
export const prefixedId = (prefix: string, what: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9a-z]{26}$`), `must be ${what} (${prefix}_…)`)
    .describe(`The ${what.replace(/^an? /, '').replace(/ id$/, '')}’s id.`);

export const AccountId = prefixedId('acct', 'an account id');
export const AgentId = prefixedId('agt', 'an agent id');

/** A project scope, as keys carry it and resources are filed under. */
export const ProjectId = z
  .string()
  .min(1)
  .max(100)
  .superRefine((s, ctx) => {
    const problem = scopeIdProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe('A project’s id (a project key’s scope).');

/** A display name: 1–100 characters, trimmed, NFC, no control or invisible format characters. */
export const DisplayName = visibleName(z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters')).describe(
  'A name for people to read: 1–100 characters, no control or invisible characters.',
);
