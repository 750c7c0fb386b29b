/** The DNS question of a custom domain's verification: the TXT records of `_svc-challenge.<domain>`. */
import { Resolver } from 'node:dns/promises';

import type { DomainSettings } from '../settings.js';

/**
 * The records found, or why none were: `absent` when the DNS answered that the name has no TXT
 * record (NXDOMAIN, NODATA: evidence that the record is gone), not when the lookup failed
 * (timeout, SERVFAIL, refused: evidence of nothing).
 */
export type TxtAnswer = { records: string[] } | { error: string; absent: boolean };
export type TxtLookup = (name: string) => Promise<TxtAnswer>;

const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

/** Why a lookup found nothing, in words a user can act on. */
function reason(code: string | undefined, name: string): string {
  switch (code) {
    case 'ENOTFOUND':
    case 'ENODATA':
      return `no TXT record at ${name} yet (DNS changes can take a while to show)`;
    case 'ETIMEOUT':
    case 'ECONNREFUSED':
    case 'ESERVFAIL':
    case 'EREFUSED':
      return `the DNS lookup of ${name} failed (${code}); try again`;
    default:
      return `the DNS lookup of ${name} failed (${code ?? 'error'})`;
  }
}

/**
 * A TXT lookup on the configured servers (SVC_SITES_DNS_SERVERS, else the system's), bounded by
 * SVC_SITES_DNS_TIMEOUT_MS. A record's strings are joined (a TXT value over 255 bytes comes as several).
 */
export function txtLookup(settings: DomainSettings): TxtLookup {
  const resolver = new Resolver({ timeout: settings.dnsTimeoutMs, tries: 1 });
  if (settings.dnsServers.length) resolver.setServers(settings.dnsServers);
  return async (name) => {
    try {
      const records = await resolver.resolveTxt(name);
      return { records: records.map((parts) => parts.join('')) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { error: reason(code, name), absent: ABSENT.has(code ?? '') };
    }
  };
}
