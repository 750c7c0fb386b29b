import { createHash } from 'node:crypto';

import { z } from 'zod';

import { DomainError } from '@svc/kit';

/**
 * An account's settings: one validated document. PUT replaces it (absent fields take their
 * defaults), PATCH merges a JSON merge patch (RFC 7396: objects merge, null removes a field,
 * which brings back its default). Every write is checked against the whole schema, so the stored
 * document is always valid. The ETag is a hash of the canonical document.
 */

const timezone = z.string().refine((tz) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}, 'must be an IANA time zone such as Europe/Paris or UTC');

const locale = z
  .string()
  .max(35)
  .refine((l) => {
    try {
      return Intl.getCanonicalLocales(l).length === 1;
    } catch {
      return false;
    }
  }, 'must be a BCP 47 language tag such as en-US');

const metadataKey = /^[A-Za-z0-9_.:-]{1,64}$/;

export const SettingsSchema = z
  .object({
    timezone: timezone.default('UTC'),
    locale: locale.default('en-US'),
    defaultModel: z.string().trim().min(1).max(200).nullable().default(null),
    notifications: z
      .object({
        email: z.boolean().default(true),
        securityAlerts: z.boolean().default(true),
      })
      .strict()
      .default({ email: true, securityAlerts: true }),
    hosts: z
      .object({
        callTimeoutMs: z.number().int().min(100).max(8000).default(5000).describe('Default timeout of POST /hosts/:id/call.'),
      })
      .strict()
      .default({ callTimeoutMs: 5000 }),
    signing: z
      .object({
        gracePeriodHours: z.number().int().min(0).max(8760).default(168).describe('How long a rotated signing key still verifies signatures.'),
      })
      .strict()
      .default({ gracePeriodHours: 168 }),
    metadata: z
      .record(z.string().regex(metadataKey, 'keys may hold letters, digits and _ . : - (1 to 64)'), z.string().max(1000))
      .refine((m) => Object.keys(m).length <= 50, 'may hold at most 50 entries')
      .default({}),
  })
  .strict();

export type Settings = z.infer<typeof SettingsSchema>;

export const DEFAULT_SETTINGS: Settings = SettingsSchema.parse({});

/** The path of the first number in a JSON value that is not finite (NaN, ±Infinity), walked without recursion. */
function nonFinitePath(doc: unknown): string[] | undefined {
  const stack: Array<[unknown, string[]]> = [[doc, []]];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'number' && !Number.isFinite(v)) return path;
    if (typeof v === 'object' && v !== null) for (const [k, child] of Object.entries(v)) stack.push([child, [...path, k]]);
  }
  return undefined;
}

/** Parses a document or answers 400 with the first problem, naming its field. */
export function validateSettings(doc: unknown): Settings {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new DomainError('invalid_argument', 'invalid_settings', 'settings: must be a JSON object');
  }
  const infinite = nonFinitePath(doc);
  // JSON has no Infinity: a parsed one is a literal that overflowed (1e400), refused rather than
  // let anything on the way turn it into null, which a merge patch reads as "back to the default".
  if (infinite) throw new DomainError('invalid_argument', 'invalid_settings', `${['settings', ...infinite].join('.')}: must be a finite number`);
  const r = SettingsSchema.safeParse(doc);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = ['settings', ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    throw new DomainError('invalid_argument', 'invalid_settings', `${[...path, issue.keys[0]].join('.')}: is not a known setting`);
  }
  throw new DomainError('invalid_argument', 'invalid_settings', `${path.join('.')}: ${issue.message}`);
}

/** RFC 7396 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** JSON with object keys sorted, so equal documents hash equally. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(v);
}

export function settingsEtag(doc: Settings): string {
  return `"${createHash('sha256').update(canonicalJson(doc)).digest('base64url').slice(0, 22)}"`;
}

/**
 * If-Match: absent means no precondition; `*` matches any document; otherwise one of the listed
 * ETags must be the current one (weak ones compare by their value).
 */
export function checkIfMatch(ifMatch: string | undefined, current: string): void {
  if (ifMatch === undefined || ifMatch.trim() === '') return;
  const tags = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (tags.includes('*') || tags.includes(current)) return;
  throw new DomainError(
    'precondition_failed',
    'precondition_failed',
    'The settings changed since you read them (If-Match does not match the current ETag).',
  );
}
