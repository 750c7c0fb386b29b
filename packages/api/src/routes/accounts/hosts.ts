import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route, Success, Timestamp } from '../../route.js';
import { AccountParams, JsonObject, list, Name, page, PrincipalRef, principalRef, success, WARNING } from './shared.js';

/** Hosts (machines) paired to an account: list, pair, unpair, and relaying a tool call to one. */

const HostId = prefixedId('host', 'a host id');

export const Host = z
  .object({
    id: z.string(),
    accountId: z.string(),
    name: z.string(),
    credentialPrefix: z.string(),
    createdAt: Timestamp,
    lastSeenAt: Nullable(Timestamp),
    pairedBy: PrincipalRef,
  })
  .meta({ id: 'Host' });

/** A paired host as the API shows it. */
export const hostJson = (h: accounts.Host) => ({
  id: h.id,
  accountId: h.accountId,
  name: h.name,
  credentialPrefix: h.credentialPrefix,
  createdAt: h.createdAt,
  lastSeenAt: h.lastSeenAt ?? null,
  pairedBy: principalRef(h.pairedBy),
});
export const hostRoutes = [
  route({
    id: 'hosts.list',
    method: 'get',
    path: '/accounts/:id/hosts',
    summary: 'The machines paired to an account as hosts, with whether each is connected now and the tools it offers.',
    errors: ['account_not_found'],
    tag: 'hosts',
    params: AccountParams,
    query: ListQuery,
    response: list('hosts', Host, 'HostList'),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.listHosts',
      request: (i) => ({ accountId: i.params.id, ...page(i) }),
      response: (res) => ({ hosts: res.hosts.map(hostJson), nextCursor: res.nextCursor ?? null }),
    },
  }),
  route({
    id: 'hosts.pair',
    method: 'post',
    effect: 'creates',
    path: '/accounts/:id/hosts',
    summary: 'Pair a machine: the host and its credential (svch_…, shown once). A person only.',
    errors: ['account_not_found'],
    tag: 'hosts',
    params: AccountParams,
    body: z.object({ name: Name }).strict().meta({ id: 'PairHostRequest' }),
    response: z.object({ host: Host, credential: z.string(), warning: z.string() }).meta({ id: 'PairedHost' }),
    status: 201,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.pairHost',
      request: (i) => ({ accountId: i.params.id, name: i.body.name }),
      response: (res) => ({ host: hostJson(res.host!), credential: res.credential, warning: WARNING }),
    },
  }),
  route({
    id: 'hosts.unpair',
    method: 'delete',
    path: '/hosts/:hostId',
    summary: 'Unpair a host: its credential stops working (unpairing again succeeds).',
    errors: ['host_not_found'],
    tag: 'hosts',
    params: z.object({ hostId: HostId }),
    response: Success,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: { rpc: 'accounts.unpairHost', request: (i) => ({ hostId: i.params.hostId }), response: success },
  }),
  route({
    id: 'hosts.call',
    method: 'post',
    effect: 'overwrites',
    outside: true,
    path: '/hosts/:hostId/call',
    summary: 'Relay a tool call to a paired host and return its answer (503 host_offline when it is not connected).',
    errors: ['host_not_found', 'host_offline', 'host_timeout'],
    tag: 'hosts',
    params: z.object({ hostId: HostId }),
    body: z
      .object({
        tool: z
          .string()
          .min(1, 'is required')
          .max(200)
          .regex(/^[A-Za-z0-9_.:/-]+$/, 'may hold letters, digits and _ . : / - only')
          .describe('The name of a tool the host offers (its tool list: GET /hosts/:hostId).'),
        arguments: JsonObject.optional().describe('The tool’s arguments, as its input schema asks (default {}).'),
        timeoutMs: z.number().int().min(100).max(8000).optional().describe('Default: settings.hosts.callTimeoutMs (5000).'),
      })
      .strict()
      .meta({ id: 'HostCallRequest' }),
    response: z
      .object({ callId: z.string(), hostId: z.string(), tool: z.string(), result: z.unknown(), durationMs: z.number().int() })
      .meta({ id: 'HostCallResult' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.callHost',
      request: (i) => ({
        hostId: i.params.hostId,
        tool: i.body.tool,
        argumentsJson: JSON.stringify(i.body.arguments ?? {}),
        timeoutMs: i.body.timeoutMs,
      }),
      response: (res) => ({
        callId: res.callId,
        hostId: res.hostId,
        tool: res.tool,
        result: JSON.parse(res.resultJson),
        durationMs: res.durationMs,
      }),
    },
  }),
];
