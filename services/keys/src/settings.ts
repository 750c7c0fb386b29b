import { defineSettings, setting } from '@svc/kit';

import type { IdempotencySettings } from './idempotency/idempotency.js';

/**
 * The keys service's settings, checked when the stack starts (docs/reliability.md):
 * - SVC_KEYS_IDEMPOTENCY_TTL_SECONDS: how long an Idempotency-Key's answer is kept from its first
 *   use, default 86400 (24 hours, as Stripe);
 * - SVC_KEYS_IDEMPOTENCY_LEASE_SECONDS: how long a request holds its key while it runs; a request
 *   whose gateway died is taken over by the same request after it, default 300;
 * - SVC_KEYS_IDEMPOTENCY_SWEEP_MS: how often expired records are deleted, default 60000.
 */
export const keysSettingsSchema = defineSettings({
  SVC_KEYS_IDEMPOTENCY_TTL_SECONDS: setting.int(1, 86_400),
  SVC_KEYS_IDEMPOTENCY_LEASE_SECONDS: setting.int(1, 300),
  SVC_KEYS_IDEMPOTENCY_SWEEP_MS: setting.int(100, 60_000),
});

export function keysSettings(env: {
  SVC_KEYS_IDEMPOTENCY_TTL_SECONDS: number;
  SVC_KEYS_IDEMPOTENCY_LEASE_SECONDS: number;
  SVC_KEYS_IDEMPOTENCY_SWEEP_MS: number;
}): { idempotency: IdempotencySettings; sweepEveryMs: number } {
  return {
    idempotency: { ttlSeconds: env.SVC_KEYS_IDEMPOTENCY_TTL_SECONDS, leaseSeconds: env.SVC_KEYS_IDEMPOTENCY_LEASE_SECONDS },
    sweepEveryMs: env.SVC_KEYS_IDEMPOTENCY_SWEEP_MS,
  };
}
