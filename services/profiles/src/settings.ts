import { defineSettings, setting } from '@svc/kit';

/**
 * The profiles service's settings, declared by its module and checked when the stack starts:
 * - SVC_PROFILES_MERGES_PER_ACCOUNT: merges and diffs (merge, diff, revert, cherry-pick: each reads
 *   and compares whole snapshots) one account may run at once on one profiles replica, default 2
 *   (an agent: 1); one more answers 429 `concurrency_limit` (docs/reliability.md, "Fair shares").
 */
export const profilesSettingsSchema = defineSettings({
  SVC_PROFILES_MERGES_PER_ACCOUNT: setting.int(1, 2, 10_000),
});
