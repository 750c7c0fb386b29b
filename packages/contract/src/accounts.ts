import { z } from 'zod';

import { scopeProblem } from '@svc/kit';

/**
 * Account fields as the API takes them, declared once: the route table validates requests with
 * them and the accounts service validates its gRPC input with the same ones.
 */

/** A verb a standing grant gives (`drive.read`, `hosts.*`, `*`). */
export const GrantVerb = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.:*/-]+$/, 'must be a verb such as drive.read, hosts.* or * (letters, digits and _ . : * / -)');

/** Where a standing grant applies: `account`, `project:<id>` or `host:<id>`, a structured value (never a path). */
export const GrantScope = z
  .string()
  .min(1)
  .max(200)
  .superRefine((s, ctx) => {
    const problem = scopeProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const Email = z.email('must be an email address').max(254);
