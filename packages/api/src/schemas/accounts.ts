import { z } from 'zod';

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

/** Where a standing grant applies: `account`, `project:<id>[/…]` or `host:<id>`. */
export const GrantScope = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be "account" or a scope such as project:web or host:host_… (printable, no spaces)');

export const Email = z.email('must be an email address').max(254);
