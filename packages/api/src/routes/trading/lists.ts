import { z } from 'zod';

import type { trading_market } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route, Success } from '../../route.js';
import { TradingSymbol, VenueId } from '../../schemas/trading.js';
import { AlertPrice, PriceAlert, TradingQuote, Watchlist, WatchlistName } from '../../schemas/trading-market.js';

/**
 * The acting account's watchlists and price alerts (docs/trading.md, "Watchlists", "Price alerts").
 */

const common = { tag: 'trading', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const WatchlistId = prefixedId('wl', 'a watchlist id');
const AlertId = prefixedId('alrt', 'an alert id');
const Symbols = z.array(TradingSymbol).max(50).describe('Paper symbols, at most 50.');
const Condition = z.enum(['above', 'below']).describe('Trigger when the reference price is at or above, or at or below, the price.');

const alertJson = (a: trading_market.PriceAlert) => ({
  ...a,
  condition: a.condition as 'above' | 'below',
  status: a.status as 'active' | 'triggered',
});
const deleted = () => ({ success: true as const });

export const tradingListRoutes = [
  route({
    ...common,
    id: 'trading.watchlists.create',
    method: 'post',
    effect: 'creates',
    path: '/trading/watchlists',
    summary: 'Create a watchlist: a named list of symbols to follow (409 `watchlist_name_taken` when the name is used).',
    errors: ['unknown_symbol', 'watchlist_name_taken'],
    body: z.object({ name: WatchlistName, symbols: Symbols.default([]) }).meta({ id: 'CreateWatchlist' }),
    response: Watchlist,
    status: 201,
    handler: { rpc: 'trading.createWatchlist', request: (i) => ({ name: i.body.name, symbols: i.body.symbols }), response: (r) => r.watchlist! },
  }),
  route({
    ...common,
    id: 'trading.watchlists.list',
    method: 'get',
    path: '/trading/watchlists',
    summary: "The acting account's watchlists, newest first.",
    query: ListQuery,
    response: z.object({ watchlists: z.array(Watchlist), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingWatchlistList' }),
    handler: {
      rpc: 'trading.listWatchlists',
      request: (i) => ({ limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({ watchlists: r.watchlists, nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'trading.watchlists.get',
    method: 'get',
    path: '/trading/watchlists/:id',
    summary: 'One trading watchlist with its symbols, in the order they were added.',
    errors: ['not_found'],
    params: z.object({ id: WatchlistId }),
    response: Watchlist,
    handler: { rpc: 'trading.getWatchlist', request: (i) => ({ id: i.params.id }), response: (r) => r.watchlist! },
  }),
  route({
    ...common,
    id: 'trading.watchlists.rename',
    statuses: { 409: 'Another watchlist has that name (`watchlist_name_taken`).' },
    method: 'patch',
    effect: 'updates',
    path: '/trading/watchlists/:id',
    summary: 'Rename a trading watchlist; its symbols stay as they are. Returns the watchlist.',
    errors: ['not_found', 'watchlist_name_taken'],
    params: z.object({ id: WatchlistId }),
    body: z.object({ name: WatchlistName }).meta({ id: 'RenameWatchlist' }),
    response: Watchlist,
    handler: { rpc: 'trading.renameWatchlist', request: (i) => ({ id: i.params.id, name: i.body.name }), response: (r) => r.watchlist! },
  }),
  route({
    ...common,
    id: 'trading.watchlists.addSymbol',
    method: 'post',
    effect: 'creates',
    path: '/trading/watchlists/:id/symbols',
    summary: 'Add a symbol to a watchlist (already there: unchanged).',
    errors: ['not_found'],
    params: z.object({ id: WatchlistId }),
    body: z.object({ symbol: TradingSymbol.describe('A paper symbol.') }).meta({ id: 'AddWatchlistSymbol' }),
    response: Watchlist,
    handler: { rpc: 'trading.addWatchlistSymbol', request: (i) => ({ id: i.params.id, symbol: i.body.symbol }), response: (r) => r.watchlist! },
  }),
  route({
    ...common,
    id: 'trading.watchlists.removeSymbol',
    method: 'delete',
    path: '/trading/watchlists/:id/symbols/:symbol',
    summary: 'Remove a symbol from a watchlist (URL-encode a slash: `BTC%2FUSD`); 404 `symbol_not_in_watchlist` when it is not there.',
    errors: ['not_found', 'symbol_not_in_watchlist'],
    params: z.object({ id: WatchlistId, symbol: TradingSymbol }),
    response: Watchlist,
    handler: {
      rpc: 'trading.removeWatchlistSymbol',
      request: (i) => ({ id: i.params.id, symbol: i.params.symbol }),
      response: (r) => r.watchlist!,
    },
  }),
  route({
    ...common,
    id: 'trading.watchlists.delete',
    method: 'delete',
    path: '/trading/watchlists/:id',
    summary: 'Delete a trading watchlist; the symbols on it are not affected elsewhere.',
    errors: ['not_found'],
    params: z.object({ id: WatchlistId }),
    response: Success,
    handler: { rpc: 'trading.deleteWatchlist', request: (i) => ({ id: i.params.id }), response: deleted },
  }),
  route({
    ...common,
    id: 'trading.watchlists.quotes',
    method: 'get',
    path: '/trading/watchlists/:id/quotes',
    summary: 'Quotes (bid, ask, last, reference) of every symbol of a watchlist at once.',
    errors: ['not_found'],
    params: z.object({ id: WatchlistId }),
    response: z.object({ id: z.string(), quotes: z.array(TradingQuote) }).meta({ id: 'TradingWatchlistQuotes' }),
    handler: { rpc: 'trading.getWatchlistQuotes', request: (i) => ({ id: i.params.id }) },
  }),
  route({
    ...common,
    id: 'trading.alerts.create',
    method: 'post',
    effect: 'creates',
    path: '/trading/alerts',
    summary:
      "Create a price alert on a paper symbol: it triggers once when the symbol's reference price is at or above (`above`) or at or below (`below`) the price; event `svc.trading.alert.triggered`.",
    errors: ['unknown_symbol'],
    body: z
      .object({
        venue: VenueId.default('paper').describe('`paper`.'),
        symbol: TradingSymbol,
        condition: Condition,
        price: AlertPrice,
        note: z.string().max(500).optional().describe('Why the alert is there.'),
      })
      .meta({ id: 'CreatePriceAlert' }),
    response: PriceAlert,
    status: 201,
    handler: { rpc: 'trading.createAlert', request: (i) => ({ ...i.body }), response: (r) => alertJson(r.alert!) },
  }),
  route({
    ...common,
    id: 'trading.alerts.list',
    method: 'get',
    path: '/trading/alerts',
    summary: "The acting account's price alerts, newest first (checked against the market first).",
    query: ListQuery.extend({
      status: z.enum(['active', 'triggered']).optional().describe('Only alerts in this state.'),
      symbol: TradingSymbol.optional(),
    }),
    response: z.object({ alerts: z.array(PriceAlert), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingPriceAlertList' }),
    handler: {
      rpc: 'trading.listAlerts',
      request: (i) => ({ status: i.query.status, symbol: i.query.symbol, limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({ alerts: r.alerts.map(alertJson), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'trading.alerts.get',
    method: 'get',
    path: '/trading/alerts/:id',
    summary: 'One price alert: whether it triggered, when and at what price.',
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    response: PriceAlert,
    handler: { rpc: 'trading.getAlert', request: (i) => ({ id: i.params.id }), response: (r) => alertJson(r.alert!) },
  }),
  route({
    ...common,
    id: 'trading.alerts.update',
    method: 'patch',
    effect: 'updates',
    path: '/trading/alerts/:id',
    summary: "Change a price alert's condition, price or note; a changed alert is armed again (active).",
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    body: z
      .object({
        condition: Condition.optional(),
        price: AlertPrice.optional(),
        note: z.string().max(500).nullable().optional().describe('A new note; null removes it.'),
      })
      .meta({ id: 'UpdatePriceAlert' }),
    response: PriceAlert,
    handler: {
      rpc: 'trading.updateAlert',
      request: (i) => ({
        id: i.params.id,
        condition: i.body.condition,
        price: i.body.price,
        note: i.body.note ?? undefined,
        clearNote: i.body.note === null,
      }),
      response: (r) => alertJson(r.alert!),
    },
  }),
  route({
    ...common,
    id: 'trading.alerts.delete',
    method: 'delete',
    path: '/trading/alerts/:id',
    summary: 'Delete a price alert on a symbol before (or after) it triggers.',
    errors: ['not_found'],
    params: z.object({ id: AlertId }),
    response: Success,
    handler: { rpc: 'trading.deleteAlert', request: (i) => ({ id: i.params.id }), response: deleted },
  }),
];
