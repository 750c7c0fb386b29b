import { z } from 'zod';

import { ListQuery, prefixedId, route } from '../../route.js';
import { CreditEntry, CreditsView, DecimalAmount } from '../../schemas/models.js';
import { ModelId } from '../../schemas/models-usage.js';
import { creditEntryJson } from './credits.js';

/** Views of the credit ledger (docs/models.md, "Credits"): entries filtered, one entry, a summary, a forecast. */

const common = { tag: 'models', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const Iso = z.iso.datetime();
const Start = Iso.describe('From this time, inclusive (ISO 8601, UTC).');
const End = Iso.describe('Until this time, exclusive (ISO 8601, UTC).');

export const creditsViewRoutes = [
  route({
    ...common,
    id: 'credits.entries.list',
    method: 'get',
    path: '/credits/entries',
    summary: "The acting account's credit ledger, newest first, filtered by kind (grant or charge), model and time.",
    query: ListQuery.extend({
      kind: z.enum(['grant', 'charge']).optional().describe('Only grants (credits added) or only charges (credits spent).'),
      model: ModelId.optional().describe("Only this model's charges."),
      start: Start.optional(),
      end: End.optional(),
    }),
    response: CreditsView,
    handler: {
      rpc: 'models.listCreditEntries',
      request: (i) => ({
        kind: i.query.kind,
        model: i.query.model,
        start: i.query.start,
        end: i.query.end,
        limit: i.query.limit,
        cursor: i.query.cursor,
      }),
      response: (r) => ({ balance: r.balance, currency: 'USD' as const, entries: r.entries.map(creditEntryJson), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'credits.entries.get',
    method: 'get',
    path: '/credits/entries/:id',
    summary: 'One entry of the credit ledger: a grant or a charge, its amount, the balance after it and its cause.',
    errors: ['not_found'],
    params: z.object({ id: prefixedId('crd', 'a credit entry id') }),
    response: CreditEntry,
    handler: { rpc: 'models.getCreditEntry', request: (i) => ({ id: i.params.id }), response: (r) => creditEntryJson(r.entry!) },
  }),
  route({
    ...common,
    id: 'credits.summary',
    method: 'get',
    path: '/credits/summary',
    summary: 'Credits granted and spent in a period (default the last 30 days), per UTC day and per model, with the balance.',
    query: z.object({ start: Start.optional(), end: End.optional() }),
    response: z
      .object({
        granted: DecimalAmount,
        spent: DecimalAmount,
        net: DecimalAmount,
        days: z.array(z.object({ day: z.string(), granted: DecimalAmount, spent: DecimalAmount }).meta({ id: 'CreditDay' })),
        models: z.array(z.object({ model: z.string(), spent: DecimalAmount, calls: z.number().int() }).meta({ id: 'CreditModelSpend' })),
        balance: DecimalAmount,
        currency: z.literal('USD'),
      })
      .meta({ id: 'CreditSummary' }),
    handler: {
      rpc: 'models.creditSummary',
      request: (i) => ({ start: i.query.start, end: i.query.end }),
      response: (r) => ({ ...r, currency: 'USD' as const, models: r.models.map((m) => ({ ...m, calls: Number(m.calls) })) }),
    },
  }),
  route({
    ...common,
    id: 'credits.forecast',
    method: 'get',
    path: '/credits/forecast',
    summary:
      'A spending forecast: the daily average of the last `days` days, the days the balance lasts at that rate, when it runs out, and 30 days at that rate.',
    query: z.object({ days: z.coerce.number().int().min(1).max(90).default(7).describe('The window to average, in days.') }),
    response: z
      .object({
        balance: DecimalAmount,
        currency: z.literal('USD'),
        windowDays: z.number().int(),
        spentInWindow: DecimalAmount,
        dailyAverage: DecimalAmount,
        daysLeft: z.number().optional().describe('Absent when nothing was spent in the window.'),
        runsOutAt: z.string().optional(),
        projected30d: DecimalAmount,
      })
      .meta({ id: 'CreditForecast' }),
    handler: {
      rpc: 'models.creditForecast',
      request: (i) => ({ days: i.query.days }),
      response: (r) => ({ ...r, currency: 'USD' as const }),
    },
  }),
];
