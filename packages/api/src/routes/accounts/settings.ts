import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { reply, route } from '../../route.js';
import { AccountParams, JsonObject } from './shared.js';

/** An account's settings document: get, replace and merge-patch, guarded by If-Match. */

export const Settings = z
  .object({
    timezone: z.string().describe('IANA time zone (default UTC).'),
    locale: z.string().describe('BCP 47 tag (default en-US).'),
    defaultModel: z.string().nullable(),
    notifications: z.object({ email: z.boolean(), securityAlerts: z.boolean() }),
    hosts: z.object({ callTimeoutMs: z.number().int().min(100).max(8000) }),
    signing: z.object({ gracePeriodHours: z.number().int().min(0).max(8760) }),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({ id: 'AccountSettings' });

const settingsReply = (res: accounts.GetSettingsResponse | accounts.ReplaceSettingsResponse | accounts.PatchSettingsResponse) =>
  reply(JSON.parse(res.settings!.documentJson), { headers: { etag: res.settings!.etag } });

const IfMatch = z.object({ 'if-match': z.string().max(2000).optional().describe('An ETag from GET; 412 when the settings changed since.') });

export const settingsRoutes = [
  route({
    id: 'accounts.settings.get',
    method: 'get',
    path: '/accounts/:id/settings',
    summary: "An account's settings document, with its ETag.",
    errors: ['account_not_found'],
    tag: 'accounts',
    params: AccountParams,
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.getSettings',
      request: (i) => ({ accountId: i.params.id }),
      response: settingsReply,
    },
  }),
  route({
    id: 'accounts.settings.replace',
    method: 'put',
    effect: 'overwrites',
    path: '/accounts/:id/settings',
    summary: 'Replace the settings (absent fields take their defaults); If-Match guards against lost updates.',
    errors: ['account_not_found', 'invalid_settings'],
    tag: 'accounts',
    params: AccountParams,
    headers: IfMatch,
    body: JsonObject.meta({ id: 'AccountSettingsDocument', description: 'The whole document; see AccountSettings for its fields.' }),
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.replaceSettings',
      request: (i) => ({ accountId: i.params.id, documentJson: JSON.stringify(i.body), ifMatch: i.headers['if-match'] }),
      response: settingsReply,
    },
  }),
  route({
    id: 'accounts.settings.patch',
    method: 'patch',
    effect: 'updates',
    path: '/accounts/:id/settings',
    summary: 'Merge into the settings (JSON merge patch: null brings a field back to its default); If-Match as for PUT.',
    errors: ['account_not_found', 'insufficient_role', 'precondition_failed', 'project_scope'],
    tag: 'accounts',
    params: AccountParams,
    headers: IfMatch,
    body: JsonObject.meta({ id: 'AccountSettingsPatch', description: 'A JSON merge patch (RFC 7396) of AccountSettings.' }),
    response: Settings,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.patchSettings',
      request: (i) => ({ accountId: i.params.id, patchJson: JSON.stringify(i.body), ifMatch: i.headers['if-match'] }),
      response: settingsReply,
    },
  }),
];
