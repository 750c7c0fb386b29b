import type { models } from '@svc/proto';

import { ListQuery, route } from '../../route.js';
import { CreditsView, GrantCreditsBody, GrantedCredits } from '../../schemas/models.js';

/**
 * Credits (docs/models.md, "Credits"): the acting account's balance and ledger, and the operator's
 * grants. Model calls are charged by the models service itself (Infer), not through a route.
 */

export const creditEntryJson = (e: models.CreditEntry) => ({
  id: e.id,
  kind: e.kind as 'grant' | 'charge',
  amount: e.amount,
  currency: 'USD' as const,
  ...(e.model !== undefined ? { model: e.model, inputTokens: e.inputTokens, outputTokens: e.outputTokens } : {}),
  ...(e.chargeKey !== undefined ? { chargeKey: e.chargeKey } : {}),
  ...(e.memo !== undefined ? { memo: e.memo } : {}),
  actor: { kind: e.actor?.kind ?? '', id: e.actor?.id ?? '' },
  createdAt: e.createdAt,
});

export const creditsRoutes = [
  route({
    id: 'credits.get',
    method: 'get',
    path: '/credits',
    summary: "The acting account's credit balance and its recent entries (grants and model charges), newest first.",
    errors: ['invalid_cursor'],
    tag: 'models',
    query: ListQuery,
    response: CreditsView,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'models.getCredits',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (res) => ({
        balance: res.balance,
        currency: 'USD' as const,
        entries: res.entries.map(creditEntryJson),
        nextCursor: res.nextCursor ?? null,
      }),
    },
  }),
  route({
    id: 'credits.grant',
    method: 'post',
    effect: 'creates',
    path: '/credits/grants',
    summary: 'Add credits to an account (the platform operator only).',
    errors: ['operator_required'],
    tag: 'models',
    body: GrantCreditsBody,
    response: GrantedCredits,
    status: 201,
    auth: 'key',
    principals: ['human'],
    authority: true,
    handler: {
      rpc: 'models.grantCredits',
      request: (i) => ({ accountId: i.body.accountId, amount: i.body.amount, memo: i.body.memo }),
      response: (res) => ({ entry: creditEntryJson(res.entry!), balance: res.balance }),
    },
  }),
];
