import { agentsClient } from '@svc/clients';
import { defineService, Envelope, type OutboxRelay, startOutboxRelay } from '@svc/kit';
import { trading } from '@svc/proto';

import { AlpacaClient } from './alpaca/client.js';
import { ALPACA, AlpacaVenue } from './alpaca/venue.js';
import { PriceAlerts } from './lists/alerts.js';
import { Journal } from './lists/journal.js';
import { ListsStore } from './lists/store.js';
import { Watchlists } from './lists/watchlists.js';
import { migrations } from './migrations/index.js';
import { credentialKeks, VenueCredentials } from './orders/credentials.js';
import { OrderUpdates } from './orders/events.js';
import { AgentLimits } from './orders/limits.js';
import { SCHEMA, TradingStore } from './orders/store.js';
import { Instruments, PAPER_INSTRUMENTS } from './orders/symbols.js';
import { Trading } from './orders/trading.js';
import { PaperVenue } from './paper/venue.js';
import { handlers, toOrder } from './server.js';
import { tradingSettings, tradingSettingsSchema } from './settings.js';
import { MarketFeed } from './views/feed.js';
import { Market } from './views/market.js';
import { OrderTools } from './views/orders.js';
import { Performance } from './views/performance.js';
import { Portfolio } from './views/portfolio.js';
import { viewHandlers } from './views/server.js';
import { ViewsStore } from './views/store.js';

export { AlpacaClient } from './alpaca/client.js';
export * from './engine/book.js';
export * from './engine/market-maker.js';
export { migrations } from './migrations/index.js';
export { SCHEMA } from './orders/store.js';
export { Instruments, PAPER_INSTRUMENTS, specOf } from './orders/symbols.js';
export { type TradingSettings, tradingSettings, tradingSettingsSchema } from './settings.js';

/**
 * The trading service (docs/trading.md): the paper venue (a limit order book per symbol, its
 * matching engine and a seeded market maker), Alpaca through its Trading API, orders with
 * idempotent client order ids, fills, paper balances, agents' limits and venue credentials.
 */
/** How long after a commit the outbox relay runs (docs/trading.md, Measured). */
const KICK_MS = 200;
/** How often the service checks the active price alerts against the market. */
const ALERT_SWEEP_MS = 2000;
/**
 * The service's sessions on PostgreSQL keep one generic plan per prepared statement. The book's
 * group write (orders/group-write.ts, 90 parameters in 14 parts) was planned anew at every
 * execution: PostgreSQL's default kept choosing a custom plan for it. Its statements are all
 * lookups by key and writes of arrays, which a generic plan serves as well (docs/trading.md).
 */
const SQL_SETTINGS = { plan_cache_mode: 'force_generic_plan' };

export const tradingService = defineService({
  name: 'trading',
  definition: trading.TradingServiceService,
  // Not 'bus': events wait in the outbox through a NATS outage.
  needs: ['sql'],
  schema: SCHEMA,
  migrations,
  settings: tradingSettingsSchema,
  async create(ctx) {
    const settings = tradingSettings(ctx.settings);
    const sql = await ctx.backends.sql(SQL_SETTINGS);
    const store = new TradingStore();
    let relay: OutboxRelay | undefined;
    // The relay runs at most once per KICK_MS after commits: under load one pass (a transaction of
    // its own) publishes the events of several order groups, for at most KICK_MS of delay.
    let kickTimer: NodeJS.Timeout | undefined;
    const kick = () => {
      kickTimer ??= setTimeout(() => {
        kickTimer = undefined;
        relay?.kick();
      }, KICK_MS);
    };
    const instruments = new Instruments(PAPER_INSTRUMENTS);
    const { keks, file } = credentialKeks(settings.keks, ctx.config.SVC_DATA_DIR);
    if (file) ctx.log.info({ kekFile: file }, 'venue credentials are sealed under a generated KEK (set SVC_TRADING_KEK to choose it)');
    const credentials = new VenueCredentials({ sql, envelope: new Envelope(keks), venues: settings.alpaca ? [ALPACA] : [], kick });
    const updates = new OrderUpdates({
      sql,
      store,
      bus: () => ctx.backends.bus(),
      onError: (err) => ctx.log.debug({ err }, 'an order update signal was not sent (watchers read the store every few seconds)'),
    });
    const published = (seqs: Array<{ accountId: string; seq: number }>) => updates.published(seqs);
    // The market data streams (made below, from the venue's views) hear of the books that moved.
    const later: { feed?: MarketFeed } = {};
    const paper = new PaperVenue({
      sql,
      store,
      instruments,
      settings: settings.paper,
      kick,
      published,
      moved: (symbols) => later.feed?.moved(symbols),
    });
    const alpaca = settings.alpaca
      ? {
          venue: new AlpacaVenue({ sql, store, client: new AlpacaClient(settings.alpaca.url), credentials, kick, published }),
          mode: settings.alpaca.mode,
        }
      : null;
    const limits = new AgentLimits({
      sql,
      kick,
      async agentVisible(principalToken, agentId) {
        await agentsClient(ctx.registry).getAgent({ id: agentId }, { principalToken });
      },
    });
    const domain = new Trading({ sql, store, instruments, paper, alpaca, limits });
    const views = new ViewsStore();
    const lists = new ListsStore();
    const deps = { sql, store, views, instruments, paper, settings: settings.paper, venues: () => domain.venues().map((v) => v.id) };
    const market = new Market(deps);
    const portfolio = new Portfolio({ ...deps, market, trading: domain });
    const orderTools = new OrderTools({ sql, store, paper, settings: settings.paper, market, trading: domain });
    const watchlists = new Watchlists({ sql, lists, instruments, market, kick });
    const alerts = new PriceAlerts({ sql, lists, market, kick });
    const journal = new Journal({ sql, lists, store, kick });
    const performance = new Performance({ sql, views, market, portfolio });
    const feed = (later.feed = new MarketFeed({
      sql,
      views,
      market,
      settings: settings.paper,
      bus: () => ctx.backends.bus(),
      onError: (err) => ctx.log.debug({ err }, 'a book signal was not sent (market data streams read again within seconds)'),
    }));
    let sweepTimer: NodeJS.Timeout | undefined;
    return {
      handlers: {
        ...handlers(domain, limits, credentials, updates),
        ...viewHandlers({ market, portfolio, orders: orderTools, watchlists, alerts, journal, performance, toOrder, feed }),
      },
      async start() {
        const bus = await ctx.backends.bus();
        relay = startOutboxRelay({ sql, schema: SCHEMA, bus, log: ctx.log });
        await updates.live.start();
        await feed.live.start();
        sweepTimer = setInterval(() => {
          alerts.sweep().catch((err: unknown) => ctx.log.warn({ err }, 'price alert sweep failed'));
        }, ALERT_SWEEP_MS);
        sweepTimer.unref();
      },
      async stop() {
        clearInterval(sweepTimer);
        clearTimeout(kickTimer);
        await relay?.stop();
        await updates.live.stop();
        await feed.live.stop();
      },
    };
  },
});
