/** The rules of custom domains that need no storage: what a host name may be, and the TXT record that proves it. */
import { randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';

import { DomainError } from '@svc/kit';

import type { TxtAnswer } from './dns.js';

/** The label a domain's ownership record is under: `_svc-challenge.<domain>`. */
export const CHALLENGE_LABEL = '_svc-challenge';
/** What the TXT record holds before the token: `svc-verify=<token>`. */
export const CHALLENGE_PREFIX = 'svc-verify=';

/** Top-level names that never reach the public DNS (RFC 6761, 6762, 7686 and the like). */
const SPECIAL_TLDS = new Set(['localhost', 'local', 'internal', 'invalid', 'test', 'example', 'onion', 'arpa', 'home', 'lan', 'corp', 'intranet']);

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const invalid = (why: string) => new DomainError('invalid_argument', 'invalid_domain', `domain: ${why}`);

/**
 * A custom domain as stored and served: the host name in ASCII (IDNA: an internationalized name
 * becomes its punycode), lower case, without a trailing dot. Refused: a port, an IP literal, a
 * single label, `_` or other characters a host name cannot hold, a wildcard, a name of a special
 * top-level domain (`localhost`, `local`, `internal`, …), and `reserved` names with every name
 * under them (the API's own host names and SVC_SITES_HOST).
 */
export function validDomain(raw: string, reserved: string[] = []): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid('a host name is required ("www.example.com").');
  const trimmed = raw.trim();
  if (trimmed.length > 300) throw invalid('at most 253 characters.');
  if (trimmed.includes('*')) throw invalid('a wildcard is not a domain; add each host name.');
  if (/^\[|^[\d.]+$|^[0-9a-f]*:[0-9a-f:.]*$/i.test(trimmed.replace(/\.$/, ''))) throw invalid('an IP address is not a domain.');
  if (/[:/?#@%\\\s]/.test(trimmed)) throw invalid('a host name only: no scheme, port, path or spaces.');
  const ascii = domainToASCII(trimmed).replace(/\.$/, '');
  if (ascii === '') throw invalid('not a valid (internationalized) host name.');
  if (ascii.length > 253) throw invalid('at most 253 characters.');
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid('a name with at least two labels ("example.com").');
  for (const l of labels) {
    if (!LABEL.test(l)) throw invalid(`"${l}" is not a host name label (a-z, 0-9 and "-", 1–63, not starting or ending with "-").`);
  }
  const tld = labels[labels.length - 1]!;
  if (/^\d+$/.test(tld)) throw invalid('an IP address is not a domain.');
  if (SPECIAL_TLDS.has(tld)) throw invalid(`names under ".${tld}" are not public.`);
  for (const r of reserved) {
    if (ascii === r || ascii.endsWith(`.${r}`)) throw invalid('this host name is the platform’s own.');
  }
  return ascii;
}

/** A new ownership token: 32 characters of base32 (160 bits). */
export function newDomainToken(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return [...randomBytes(32)].map((b) => alphabet[b & 31]).join('');
}

/** The TXT record a domain's owner adds: its name and its value. */
export function challengeOf(domain: string, token: string): { name: string; value: string } {
  return { name: `${CHALLENGE_LABEL}.${domain}`, value: `${CHALLENGE_PREFIX}${token}` };
}

/**
 * What a TXT answer says of a claim's record: `found` (one record is exactly its value), `absent`
 * (the DNS answered, and no record is: none at all, or another token's, as when the name changed
 * hands), or `unknown` (the lookup failed: a timeout or SERVFAIL says nothing of the record).
 * `error` says why it was not found, in words a user can act on.
 */
export function readChallenge(
  answer: TxtAnswer,
  challenge: { name: string; value: string },
): { outcome: 'found' | 'absent' | 'unknown'; error: string | null } {
  if ('error' in answer) return { outcome: answer.absent ? 'absent' : 'unknown', error: answer.error };
  if (answer.records.some((r) => r.trim() === challenge.value)) return { outcome: 'found', error: null };
  const other = answer.records.some((r) => r.startsWith(CHALLENGE_PREFIX));
  return {
    outcome: 'absent',
    error: other
      ? `the TXT record at ${challenge.name} carries another token; set it to "${challenge.value}"`
      : `no TXT record at ${challenge.name} carries "${challenge.value}"`,
  };
}

/**
 * What a periodic re-check does to a verified domain (docs/sites.md, "Re-checks"). Found: it stays
 * verified, and an earlier absence is forgotten. Unknown: nothing changes, since a failed lookup is
 * no evidence: it neither starts the grace period nor ends the domain. Absent: the grace period
 * starts at the first such answer (DNS hiccups and a record being moved must not cost the site
 * its name), and an absent answer once the period is over makes the domain pending again.
 */
export function recheckVerdict(
  outcome: 'found' | 'absent' | 'unknown',
  missingSince: Date | null,
  now: Date,
  graceMs: number,
): { missingSince: Date | null; lapsed: boolean } {
  if (outcome === 'found') return { missingSince: null, lapsed: false };
  if (outcome === 'unknown') return { missingSince, lapsed: false };
  const since = missingSince ?? now;
  return { missingSince: since, lapsed: now.getTime() - since.getTime() >= graceMs };
}

/** Why a re-check made a verified domain pending again, and what its owner does about it. */
export function lapsedError(challenge: { name: string; value: string }, missingSince: Date): string {
  return (
    `no TXT record at ${challenge.name} has carried "${challenge.value}" since ${missingSince.toISOString()}: ` +
    'the domain is no longer served; add the record again and verify it'
  );
}
