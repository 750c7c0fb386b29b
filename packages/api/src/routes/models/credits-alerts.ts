import { z } from 'zod';

import type { models_usage } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route, Success } from '../../route.js';
import { DecimalAmount } from '../../schemas/models.js';

/**
 * Low-balance alerts on credits (docs/models.md, "Credits"): each triggers once when the acting
 * account's balance is at or below its threshold, with the event `svc.models.credits.low`.
 */

const common = { tag: 'models', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const AlertId = prefixedId('cral', 'a credit alert id');
const Threshold = z
  .string()
  .regex(/^\d{1,7}(\.\d{1,12})?$/, 'must be a decimal amount such as "5" or "0.5"')
  .describe('Trigger when the balance is at or below this amount (USD, a decimal string).');
const Note = z.string().max(200).describe('Why the alert is there.');

const CreditAlert = z
  .object({
    id: z.string(),
    threshold: DecimalAmount,
    note: z.string().optional(),
    status: z.enum(['active', 'triggered']),
    triggeredAt: z.string().optional(),
    triggeredBalance: DecimalAmount.optional().describe('The balance that triggered it.'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'CreditAlert' });

const alertJson = (a: models_usage.CreditAlert) => ({ ...a, status: a.status as 'active' | 'triggered' });

export const creditsAlertRoutes = [
  route({
    ...common,
    id: 'credits.alerts.create',
    method: 'post',
    effect: 'creates',
    path: '/credits/alerts',
    summary: 'Create a low-balance alert: it triggers once when the credit balance is at or below the threshold (already so: it answers triggered).',
    body: z.object({ threshold: Threshold, note: Note.optional() }).meta({ id: 'CreateCreditAlert' }),
    response: CreditAlert,
    status: 201,
    handler: {
      rpc: 'models.createCreditAlert',
      request: (i) => ({ threshold: i.body.threshold, note: i.body.note }),
      response: (r) => alertJson(r.alert!),
    },
  }),
  route({
    ...common,
    id: 'credits.alerts.list',
    method: 'get',
    path: '/credits/alerts',
    summary: "The acting account's low-balance alerts, newest first.",
    query: ListQuery.extend({
      status: z.enum(['active', 'triggered']).optional().describe('Only alerts still waiting (active) or already set off (triggered).'),
    }),
    response: z.object({ alerts: z.array(CreditAlert), nextCursor: Nullable(z.string()) }).meta({ id: 'CreditAlertList' }),
    handler: {
      rpc: 'models.listCreditAlerts',
      request: (i) => ({ status: i.query.status, limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({ alerts: r.alerts.map(alertJson), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'credits.alerts.get',
    method: 'get',
    path: '/credits/alerts/:id',
    summary: 'One low-balance credit alert: its threshold, note and whether it has triggered.',
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    response: CreditAlert,
    handler: { rpc: 'models.getCreditAlert', request: (i) => ({ id: i.params.id }), response: (r) => alertJson(r.alert!) },
  }),
  route({
    ...common,
    id: 'credits.alerts.update',
    method: 'patch',
    effect: 'updates',
    path: '/credits/alerts/:id',
    summary: "Change a low-balance alert's threshold or note (`note: null` removes it); a changed alert is armed again.",
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    body: z
      .object({ threshold: Threshold.optional(), note: Note.nullable().optional().describe('Why the alert is there; null clears it.') })
      .meta({ id: 'UpdateCreditAlert' }),
    response: CreditAlert,
    handler: {
      rpc: 'models.updateCreditAlert',
      request: (i) => ({ id: i.params.id, threshold: i.body.threshold, note: i.body.note ?? undefined, clearNote: i.body.note === null }),
      response: (r) => alertJson(r.alert!),
    },
  }),
  route({
    ...common,
    id: 'credits.alerts.delete',
    method: 'delete',
    path: '/credits/alerts/:id',
    summary: 'Delete a low-balance credit alert; it will no longer trigger.',
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    response: Success,
    handler: { rpc: 'models.deleteCreditAlert', request: (i) => ({ id: i.params.id }), response: () => ({ success: true as const }) },
  }),
];
