import { z } from 'zod';

import type { drive_sites } from '@svc/proto';

import { Nullable, reply, type Route, route, Success, Timestamp } from '../../route.js';
import { SiteId as SiteIdBase } from './ids.js';

/**
 * Custom domains of a site (docs/sites.md, "Custom domains"): a host name added `pending`, proved
 * by a DNS TXT record carrying its token, then served at the site's root by the gateway.
 */

const KEY: Pick<Route, 'auth' | 'principals' | 'authority' | 'tag'> = { auth: 'key', principals: ['human', 'agent'], authority: false, tag: 'sites' };
const SiteId = SiteIdBase.describe('The site’s id (site_…).');
const DomainName = z
  .string()
  .min(1)
  .max(300)
  .regex(/^[^\s]+\.[^\s.]+\.?$/, 'must be a host name such as www.example.com')
  .describe('A host name ("www.example.com"; an internationalized name is stored as its punycode), without scheme, port or path.');
const params = z.object({ id: SiteId });
const domainParams = z.object({ id: SiteId, domain: DomainName });

const Actor = z.object({ kind: z.string(), id: z.string(), keyId: Nullable(z.string()) });

export const SiteDomain = z
  .object({
    domain: z.string().describe('The host name, in ASCII and lower case.'),
    siteId: z.string(),
    status: z.enum(['pending', 'verified']).describe('pending: not served until verified; verified: served at the site’s root.'),
    verification: z
      .object({
        type: z.literal('TXT'),
        name: z.string().describe('_svc-challenge.<domain>'),
        value: z.string().describe('svc-verify=<token>: the record’s exact value.'),
      })
      .describe('The DNS record that proves control of the domain.'),
    verifiedAt: Nullable(Timestamp),
    lastCheckedAt: Nullable(Timestamp).describe(
      'When the TXT record was last looked up: by sites.domains.verify, or by the periodic re-check of a verified domain; null when never.',
    ),
    lastCheckError: Nullable(z.string()).describe(
      'Why the last check did not find the record: for a pending domain, why it is not verified; for a verified one, what its last re-check found.',
    ),
    missingSince: Nullable(Timestamp).describe(
      'A verified domain whose TXT record a re-check found gone: since when. It is still served, and goes back to pending once the grace ' +
        'period is over unless the record is back; null while the record is found.',
    ),
    createdAt: Timestamp,
    createdBy: Actor,
  })
  .meta({ id: 'SiteDomain' });

function domainView(d: drive_sites.SiteDomain): z.output<typeof SiteDomain> {
  return {
    domain: d.domain,
    siteId: d.siteId,
    status: d.status === 'verified' ? 'verified' : 'pending',
    verification: { type: 'TXT', name: d.txtName, value: d.txtValue },
    verifiedAt: d.verifiedAt ?? null,
    lastCheckedAt: d.lastCheckedAt ?? null,
    lastCheckError: d.lastCheckError ?? null,
    missingSince: d.missingSince ?? null,
    createdAt: d.createdAt,
    createdBy: { kind: d.createdBy?.kind ?? '', id: d.createdBy?.id ?? '', keyId: d.createdBy?.keyId ?? null },
  };
}

export const sitesDomainsRoutes = [
  route({
    ...KEY,
    id: 'sites.domains.add',
    statuses: { 200: 'The site has the domain already.' },
    method: 'post',
    effect: 'creates',
    path: '/sites/:id/domains',
    summary:
      'Add a custom domain to a site. It is pending (not served) until verified: add the DNS TXT record the answer names ' +
      '(`_svc-challenge.<domain>` = `svc-verify=<token>`), then call sites.domains.verify. 201, or 200 when the site has it already; ' +
      '409 domain_taken when another account’s site serves it; 400 invalid_domain, too_many_domains.',
    errors: ['domain_exists', 'domain_taken', 'invalid_domain', 'site_not_found', 'too_many_domains'],
    params,
    body: z.object({ domain: DomainName }).strict().meta({ id: 'AddSiteDomainRequest' }),
    response: SiteDomain,
    status: 201,
    handler: {
      rpc: 'drive.addSiteDomain',
      request: (i) => ({ siteId: i.params.id, domain: i.body.domain }),
      response: (r) => reply(domainView(r.domain!), { status: r.created ? 201 : 200 }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.domains.list',
    method: 'get',
    path: '/sites/:id/domains',
    summary:
      'A site’s custom domains, pending and verified, with the TXT record each needs. A verified domain’s record is looked up again ' +
      'periodically (`lastCheckedAt`); one gone for longer than the grace period (`missingSince`) goes back to pending, and a pending ' +
      'claim not verified in time is deleted.',
    errors: ['site_not_found'],
    params,
    response: z.object({ domains: z.array(SiteDomain) }).meta({ id: 'SiteDomainList' }),
    handler: {
      rpc: 'drive.listSiteDomains',
      request: (i) => ({ siteId: i.params.id }),
      response: (r) => ({ domains: r.domains.map(domainView) }),
    },
  }),
  route({
    ...KEY,
    id: 'sites.domains.verify',
    method: 'post',
    effect: 'updates',
    outside: true,
    path: '/sites/:id/domains/:domain/verify',
    summary:
      'Check a custom domain’s DNS TXT record now: when it carries the token, the domain is verified and served from then on. ' +
      'Otherwise it stays pending and `lastCheckError` says why (DNS changes take time to show: call again later).',
    errors: ['domain_not_found', 'domain_taken', 'site_not_found'],
    params: domainParams,
    response: SiteDomain,
    handler: {
      rpc: 'drive.verifySiteDomain',
      request: (i) => ({ siteId: i.params.id, domain: i.params.domain }),
      response: (r) => domainView(r.domain!),
      deadlineMs: 30_000,
    },
  }),
  route({
    ...KEY,
    id: 'sites.domains.delete',
    method: 'delete',
    path: '/sites/:id/domains/:domain',
    summary: 'Remove a custom domain from a site: it stops being served at once (not there: 200).',
    errors: ['site_not_found'],
    params: domainParams,
    response: Success,
    handler: {
      rpc: 'drive.removeSiteDomain',
      request: (i) => ({ siteId: i.params.id, domain: i.params.domain }),
      response: () => ({ success: true as const }),
    },
  }),
];
