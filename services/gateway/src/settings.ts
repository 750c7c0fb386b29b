import { z } from 'zod';

import { defineSettings } from '@svc/kit';

/**
 * The gateway's own settings, checked when the stack starts (a bad value stops it with
 * `svc: invalid configuration: SVC_BODY_LIMIT: …`):
 * - SVC_BODY_LIMIT: the JSON body limit (413 above it), default 1mb;
 * - SVC_TRUST_PROXY: proxies in front of the gateway whose X-Forwarded-For is trusted: a hop count
 *   (1 behind one ingress), `true` or `false` (the default). Decides the client address the
 *   failed-authentication limit counts by;
 * - SVC_SITES_HOST: a host name (`sites.example.com`, or `*.sites.example.com`) under which
 *   `<slug>.<host>` serves a hosted site at its root (docs/sites.md); unset, sites are served at
 *   /sites/<slug>/ only.
 * - SVC_MCP_ALLOWED_ORIGINS: browser origins (`https://app.example.com`, comma-separated) allowed to
 *   call POST /mcp, with CORS; empty (the default): a request with any Origin header is refused (403).
 * - SVC_SSE_MAX_STREAMS_PER_KEY: live event streams one key may hold open on one gateway replica at
 *   once (default 20); one more answers 429 too_many_streams.
 */
export const gatewaySettingsSchema = defineSettings({
  SVC_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'must look like 1mb or 512kb')
    .default('1mb'),
  SVC_TRUST_PROXY: z
    .string()
    .regex(/^(false|true|\d{1,2})$/, 'must be false, true or a number of proxy hops')
    .default('false')
    .transform((v) => (v === 'false' ? false : v === 'true' ? true : Number(v))),
  SVC_SITES_HOST: z
    .string()
    .regex(/^(\*\.)?([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i, 'must be a host name such as sites.example.com')
    .optional(),
  SVC_MCP_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^https?:\/\/[^/\s,]+$/i, 'each origin must look like https://app.example.com'))),
  SVC_SSE_MAX_STREAMS_PER_KEY: z.coerce.number().int().min(1).max(10_000).default(20),
});

export type GatewaySettings = z.output<typeof gatewaySettingsSchema>;
