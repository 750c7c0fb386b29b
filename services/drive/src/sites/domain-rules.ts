/** The rules of custom domains that need no storage: what a host name may be, and the TXT record that proves it. */
import { randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';

import { DomainError } from '@svc/kit';

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
