import { z } from 'zod';

import { defineSettings } from '@svc/kit';

/**
 * The runtime's settings (docs/threads.md, "Runs"):
 * - SVC_RUNTIME_CONCURRENCY: runs one worker process executes at once (default 8);
 * - SVC_RUN_LEASE_MS: how long a run stays with a worker that gives no sign of life before another
 *   takes it over from its last checkpoint (default 15000; the worker renews it every third of that);
 * - SVC_RUN_MAX_STEPS, SVC_RUN_MAX_TOKENS: a run's limits when its agent sets none (default 20 steps,
 *   200000 input plus output tokens);
 * - SVC_RUN_APPROVAL_TTL_SECONDS: how long a request for a person's approval or answer waits before it
 *   expires and counts as rejected (default 86400, a day);
 * - SVC_DEFAULT_MODEL: the model of an agent that names none (default `svc/dev`, the development model).
 */
export const runtimeSettingsSchema = defineSettings({
  SVC_RUNTIME_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  SVC_RUN_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).default(15_000),
  SVC_RUN_MAX_STEPS: z.coerce.number().int().min(1).max(1000).default(20),
  SVC_RUN_MAX_TOKENS: z.coerce.number().int().min(100).max(100_000_000).default(200_000),
  SVC_RUN_APPROVAL_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(30 * 86_400)
    .default(86_400),
  SVC_DEFAULT_MODEL: z
    .string()
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .default('svc/dev'),
});

export type RuntimeSettings = z.output<typeof runtimeSettingsSchema>;
