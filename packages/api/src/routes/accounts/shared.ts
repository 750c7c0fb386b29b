import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { AccountId, DisplayName, Nullable, type RouteInput } from '../../route.js';

/** Shapes and helpers the accounts routes share: params, names, roles, the principal reference, lists, pages. */

export const Name = DisplayName;
export const Role = z.enum(['owner', 'admin', 'member'], { error: 'must be owner, admin or member' });
export const Iso = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });
export const JsonObject = z.record(z.string(), z.unknown(), { error: 'must be a JSON object' });

export const AccountParams = z.object({ id: AccountId });

export const PrincipalRef = z
  .object({
    kind: z.enum(['human', 'agent', 'host', 'system']),
    id: z.string(),
    keyId: Nullable(z.string()),
    channel: z.string(),
    accountId: z.string().describe('The account the principal acted in.'),
  })
  .meta({ id: 'PrincipalRef' });

/** Who did something, as the API shows it: `system` when the service names no principal. */
export const principalRef = (p: accounts.Principal | undefined) => ({
  kind: p?.kind ?? 'system',
  id: p?.id ?? 'system',
  keyId: p?.keyId ?? null,
  channel: p?.channel ?? 'internal',
  accountId: p?.accountId ?? 'system',
});

export const success = () => ({ success: true as const });
export const page = (i: RouteInput<unknown, { limit: number; cursor?: string }>) => ({ limit: i.query.limit, cursor: i.query.cursor });
export const WARNING = 'This secret is displayed only once. Store it securely: it cannot be shown again.';

export const list = <T extends z.ZodType>(name: string, item: T, id: string) =>
  z.object({ [name]: z.array(item), nextCursor: Nullable(z.string()) }).meta({ id });
