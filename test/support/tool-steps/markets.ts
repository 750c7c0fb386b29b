import { type Principal, PrincipalSigner } from '@svc/kit';
import { models } from '@svc/proto';

import type { TestStack } from '../stack';
import type { Step } from './types';

/** Steps of the trading, models and credits tools (helper "markets"); each makes its own fixtures. */

const Z26 = 'z'.repeat(26);

const trading: Step[] = [
  { tool: 'trading_symbols_list', valid: () => ({ assetClass: 'crypto' }), invalid: () => ({ assetClass: 'bonds' }) },
  { tool: 'trading_symbols_get', valid: () => ({ symbol: 'ETH/USD' }), invalid: () => ({ symbol: 'NOPE' }) },
  { tool: 'trading_quote', valid: () => ({ symbol: 'ETH/USD' }), invalid: () => ({ symbol: 'NOPE' }) },
  { tool: 'trading_tickers', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  { tool: 'trading_trades', valid: () => ({ symbol: 'ETH/USD', limit: 5 }), invalid: () => ({ symbol: 'ETH/USD', limit: 0 }) },
  { tool: 'trading_quotes', valid: () => ({ symbols: 'ETH/USD,AAPL' }), invalid: () => ({ symbols: 'NOPE' }) },
  { tool: 'trading_bars', valid: () => ({ symbol: 'ETH/USD', interval: '1h' }), invalid: () => ({ symbol: 'ETH/USD', interval: '2m' }) },
  { tool: 'trading_candles', valid: () => ({ symbol: 'ETH/USD', interval: '1h' }), invalid: () => ({ symbol: 'ETH/USD', interval: '2m' }) },
  { tool: 'trading_clock', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  { tool: 'trading_fees', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  {
    tool: 'trading_orders_preview',
    valid: () => ({ symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '0.01' }),
    invalid: () => ({ symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '0.0000001' }),
  },
  { tool: 'trading_buying_power', valid: () => ({ symbol: 'ETH/USD' }), invalid: () => ({ symbol: 'ETH/USD', side: 'hold' }) },
  {
    tool: 'trading_orders_replace',
    before: async (s, t, key) => {
      const body = { symbol: 'ETH/USD', side: 'buy', type: 'limit', qty: '0.01', price: '1', clientOrderId: `mcp-${s.run}-r0` };
      s.replaceOrderId = (await t.ok('POST', '/trading/order', key, body)).body.id;
    },
    valid: (s) => ({ id: s.replaceOrderId, price: '2', clientOrderId: `mcp-${s.run}-r1` }),
    invalid: (s) => ({ id: s.replaceOrderId, price: '0.001' }),
    keep: (s, b) => (s.replacedOrderId = b.order.id),
  },
  { tool: 'trading_orders_history', valid: (s) => ({ id: s.replaceOrderId }), invalid: () => ({ id: `ord_${Z26}` }) },
  { tool: 'trading_orders_by_client_id', valid: (s) => ({ clientOrderId: `mcp-${s.run}-r1` }), invalid: () => ({ clientOrderId: 'never-used' }) },
  {
    tool: 'trading_positions_list',
    before: async (_s, t, key) => void (await t.ok('POST', '/trading/order', key, { symbol: 'ETH/USD', side: 'buy', type: 'market', qty: '0.05' })),
    valid: () => ({}),
    invalid: () => ({ venue: 'nowhere' }),
  },
  { tool: 'trading_positions_get', valid: () => ({ symbol: 'ETH/USD' }), invalid: () => ({ symbol: 'SPY' }) },
  { tool: 'trading_positions_close', valid: () => ({ symbol: 'ETH/USD', qty: '0.01' }), invalid: () => ({ symbol: 'BTC/USD' }) },
  { tool: 'trading_pnl', valid: () => ({}), invalid: () => ({ symbol: 'NOPE' }) },
  { tool: 'trading_performance', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  { tool: 'trading_portfolio_allocation', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  {
    tool: 'trading_fill',
    before: async (s, t, key) => void (s.fillId = (await t.ok('GET', '/trading/fills?limit=1', key)).body.fills[0].id),
    valid: (s) => ({ id: s.fillId }),
    invalid: () => ({ id: `fill_${Z26}` }),
  },
  { tool: 'trading_portfolio_history', valid: () => ({ interval: '1h' }), invalid: () => ({ interval: '2m' }) },
  { tool: 'trading_activities', valid: () => ({ limit: 5 }), invalid: () => ({ kind: 'deposit' }) },
  { tool: 'trading_stats', valid: () => ({}), invalid: () => ({ start: 'yesterday' }) },
  { tool: 'trading_positions_close_all', valid: () => ({}), invalid: () => ({ venue: 'nowhere' }) },
  {
    tool: 'trading_watchlists_create',
    valid: (s) => ({ name: `watch-${s.run}`, symbols: ['ETH/USD'] }),
    invalid: (s) => ({ name: `watch-${s.run}` }),
    keep: (s, b) => (s.watchlistId = b.id),
  },
  { tool: 'trading_watchlists_list', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  { tool: 'trading_watchlists_get', valid: (s) => ({ id: s.watchlistId }), invalid: () => ({ id: `wl_${Z26}` }) },
  {
    tool: 'trading_watchlists_rename',
    valid: (s) => ({ id: s.watchlistId, name: `renamed-${s.run}` }),
    invalid: (s) => ({ id: s.watchlistId, name: '' }),
  },
  {
    tool: 'trading_watchlists_add_symbol',
    valid: (s) => ({ id: s.watchlistId, symbol: 'AAPL' }),
    invalid: (s) => ({ id: s.watchlistId, symbol: 'NOPE' }),
  },
  { tool: 'trading_watchlists_quotes', valid: (s) => ({ id: s.watchlistId }), invalid: () => ({ id: `wl_${Z26}` }) },
  {
    tool: 'trading_watchlists_remove_symbol',
    valid: (s) => ({ id: s.watchlistId, symbol: 'AAPL' }),
    invalid: (s) => ({ id: s.watchlistId, symbol: 'SPY' }),
  },
  { tool: 'trading_watchlists_delete', valid: (s) => ({ id: s.watchlistId }), invalid: (s) => ({ id: s.watchlistId }) },
  {
    tool: 'trading_alerts_create',
    valid: () => ({ symbol: 'ETH/USD', condition: 'above', price: '1000000', note: 'moon' }),
    invalid: () => ({ symbol: 'ETH/USD', condition: 'near', price: '1' }),
    keep: (s, b) => (s.alertId = b.id),
  },
  { tool: 'trading_alerts_list', valid: () => ({ status: 'active' }), invalid: () => ({ status: 'gone' }) },
  { tool: 'trading_alerts_get', valid: (s) => ({ id: s.alertId }), invalid: () => ({ id: `alrt_${Z26}` }) },
  { tool: 'trading_alerts_update', valid: (s) => ({ id: s.alertId, price: '999999' }), invalid: (s) => ({ id: s.alertId }) },
  { tool: 'trading_alerts_delete', valid: (s) => ({ id: s.alertId }), invalid: (s) => ({ id: s.alertId }) },
  {
    tool: 'trading_journal_create',
    valid: (s) => ({ title: `note ${s.run}`, body: 'why', orderId: s.replacedOrderId, tags: ['mcp'] }),
    invalid: () => ({ title: '' }),
    keep: (s, b) => (s.journalId = b.id),
  },
  { tool: 'trading_journal_list', valid: () => ({ tag: 'mcp' }), invalid: () => ({ tag: 'Bad Tag' }) },
  { tool: 'trading_journal_tags', valid: () => ({}) },
  { tool: 'trading_journal_get', valid: (s) => ({ id: s.journalId }), invalid: () => ({ id: `jrn_${Z26}` }) },
  { tool: 'trading_journal_update', valid: (s) => ({ id: s.journalId, body: 'edited' }), invalid: (s) => ({ id: s.journalId }) },
  { tool: 'trading_journal_delete', valid: (s) => ({ id: s.journalId }), invalid: (s) => ({ id: s.journalId }) },
];

/** One call of the development model through Infer, as an agent of the account: a usage record. */
async function devCall(t: TestStack, accountId: string): Promise<void> {
  const p: Principal = { kind: 'agent', agentId: 'agt_tools', accountId, channel: 'internal' };
  const principalToken = (await new PrincipalSigner(t.env.SVC_INTERNAL_SECRET!).sign(p)).token;
  const c = t.stack.registry.client('models', models.ModelsServiceService, 'svc.models.v1.ModelsService');
  const msg = { role: 'user', content: 'hi', toolCalls: [], toolCallId: '', name: '' };
  for await (const e of c.infer({ model: 'svc/dev', messages: [msg], tools: [], chargeKey: '' }, { principalToken })) void e;
}

const modelSteps: Step[] = [
  { tool: 'models_get', valid: () => ({ id: 'openai/gpt-4o' }), invalid: () => ({ id: 'openai/nope' }) },
  { tool: 'models_family', valid: () => ({ id: 'gpt-4o' }), invalid: () => ({ id: 'nope' }) },
  {
    tool: 'models_estimate_cost',
    valid: () => ({ model: 'openai/gpt-4o', inputTokens: 1000, outputTokens: 200, calls: 10 }),
    invalid: () => ({ model: 'openai/gpt-4o', inputTokens: -5 }),
  },
  { tool: 'models_count_tokens', valid: () => ({ text: 'How many tokens is this?', model: 'svc/dev' }), invalid: () => ({ model: 'svc/dev' }) },
  {
    tool: 'models_truncate_text',
    valid: () => ({ text: 'a long text to cut down to size', maxTokens: 3, keep: 'end' }),
    invalid: () => ({ text: 'abc' }),
  },
  { tool: 'models_compare', valid: () => ({ ids: 'openai/gpt-4o,openai/gpt-4o-mini' }), invalid: () => ({ ids: 'openai/gpt-4o' }) },
  { tool: 'models_recommend', valid: () => ({ useCase: 'code', tools: true }), invalid: () => ({ useCase: 'poetry' }) },
  {
    tool: 'models_usage_list',
    before: async (s, t) => devCall(t, s.accountId),
    valid: () => ({ limit: 5 }),
    invalid: () => ({ cursor: 'bad' }),
    keep: (s, b) => (s.usageId = b.records[0].id),
  },
  { tool: 'models_usage_get', valid: (s) => ({ id: s.usageId }), invalid: () => ({ id: `use_${Z26}` }) },
  { tool: 'models_usage_summary', valid: () => ({ groupBy: 'day' }), invalid: () => ({ groupBy: 'colour' }) },
  { tool: 'models_providers_list', valid: () => ({}) },
  {
    tool: 'credits_entries_list',
    before: async (s, t) => void (await t.ok('POST', '/credits/grants', t.bootstrapKey, { accountId: s.accountId, amount: '1', memo: 'tools' })),
    valid: () => ({ kind: 'grant' }),
    invalid: () => ({ kind: 'refund' }),
    keep: (s, b) => (s.creditEntryId = b.entries[0].id),
  },
  { tool: 'credits_entries_get', valid: (s) => ({ id: s.creditEntryId }), invalid: () => ({ id: `crd_${Z26}` }) },
  { tool: 'credits_summary', valid: () => ({}), invalid: () => ({ start: 'yesterday' }) },
  { tool: 'credits_forecast', valid: () => ({ days: 14 }), invalid: () => ({ days: 0 }) },
  {
    tool: 'credits_alerts_create',
    valid: () => ({ threshold: '0.25', note: 'low' }),
    invalid: () => ({ threshold: '-1' }),
    keep: (s, b) => (s.creditAlertId = b.id),
  },
  { tool: 'credits_alerts_list', valid: () => ({}), invalid: () => ({ status: 'done' }) },
  { tool: 'credits_alerts_get', valid: (s) => ({ id: s.creditAlertId }), invalid: () => ({ id: `cral_${Z26}` }) },
  { tool: 'credits_alerts_update', valid: (s) => ({ id: s.creditAlertId, threshold: '0.1' }), invalid: (s) => ({ id: s.creditAlertId }) },
  { tool: 'credits_alerts_delete', valid: (s) => ({ id: s.creditAlertId }), invalid: (s) => ({ id: s.creditAlertId }) },
];

export const STEPS: Step[] = [...trading, ...modelSteps];
