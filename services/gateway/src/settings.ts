import { z } from 'zod';

import { type Limits, parseLimits } from '@svc/dispatch';
import { defineSettings } from '@svc/kit';
import { mcpEndpointSettings } from '@svc/tools';

/** Per API key: 200 reads, 100 writes, 10 runs a second sustained, bursts of ten seconds' worth. */
export const DEFAULT_KEY_LIMITS: Limits = {
  read: { capacity: 2000, windowSeconds: 10 },
  write: { capacity: 1000, windowSeconds: 10 },
  compute: { capacity: 100, windowSeconds: 10 },
};
/** Per acting account (all its keys together): three keys' worth. */
export const DEFAULT_ACCOUNT_LIMITS: Limits = {
  read: { capacity: 6000, windowSeconds: 10 },
  write: { capacity: 3000, windowSeconds: 10 },
  compute: { capacity: 300, windowSeconds: 10 },
};

const limits = (defaults: Limits) =>
  z
    .string()
    .default('')
    .transform((v, ctx) => {
      try {
        return parseLimits(v, defaults);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });

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
 * - SVC_RATE_LIMITS, SVC_RATE_LIMITS_ACCOUNT: token buckets per API key and per acting account for
 *   each class of operation, `read=2000/10,write=1000/10,compute=100/10` (capacity/seconds to refill;
 *   classes left out keep their default), or `off` (docs/reliability.md).
 * - SVC_MCP_ALLOWED_ORIGINS: browser origins (`https://app.example.com`, comma-separated) allowed to
 *   call POST /mcp, with CORS; empty (the default): a request with any Origin header is refused (403).
 * - SVC_MCP_TOOLS_PAGE_SIZE: tools per tools/list page of POST /mcp (default 50; @svc/tools).
 * - SVC_SSE_MAX_STREAMS_PER_KEY: live event streams one key may hold open on one gateway replica at
 *   once (default 20); one more answers 429 too_many_streams.
 * - SVC_PUBLIC_URL: the origin clients reach the gateway at (https://api.example.com): the OAuth
 *   issuer and the resources' identifiers (docs/oauth.md); unset, the gateway's own address.
 * - SVC_OAUTH: `on` (the default) serves the authorization server and accepts its tokens on /mcp
 *   and the API; `off` takes API keys only.
 * - SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS, SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS: how long an access token
 *   (600 s) and a refresh token and its grant, from its approval (30 days), live.
 * - SVC_OAUTH_METADATA_ALLOWED_HOSTS: hosts or networks a client's metadata document may be fetched
 *   from though private (comma-separated, as SVC_MODELS_ALLOWED_HOSTS); none by default.
 * - SVC_UPLOADS_PER_ACCOUNT, SVC_GIT_BUILDS_PER_ACCOUNT: drive uploads (API and WebDAV) and Git
 *   requests (a repository brought up to date and packed, or a push deployed) one account may have
 *   in progress on one gateway replica, default 4 and 2 (an agent: half, rounded up); one more
 *   answers 429 `concurrency_limit` with Retry-After (docs/reliability.md, "Fair shares").
 */
export const gatewaySettingsSchema = defineSettings({
  SVC_RATE_LIMITS: limits(DEFAULT_KEY_LIMITS),
  SVC_RATE_LIMITS_ACCOUNT: limits(DEFAULT_ACCOUNT_LIMITS),
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
  SVC_UPLOADS_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(4),
  SVC_GIT_BUILDS_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(2),
  SVC_PUBLIC_URL: z
    .string()
    .regex(/^https?:\/\/[^/\s?#]+$/i, 'must be an origin such as https://api.example.com (no path)')
    .optional(),
  SVC_OAUTH: z.enum(['on', 'off']).default('on'),
  SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(600),
  SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(3600)
    .max(90 * 24 * 3600)
    .default(30 * 24 * 3600),
  SVC_OAUTH_METADATA_ALLOWED_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    ),
  ...mcpEndpointSettings,
});

export type GatewaySettings = z.output<typeof gatewaySettingsSchema>;
