import { z } from 'zod';

/**
 * Trading's shared schemas (docs/trading.md): the route table validates input with them and
 * documents answers; the trading service checks the same rules again where they need its data
 * (an instrument's tick and lot sizes, a venue's list).
 */

export const TRADING_SIDES = ['buy', 'sell'] as const;
export const TRADING_ORDER_TYPES = ['market', 'limit', 'stop', 'stop_limit', 'trailing_stop'] as const;
export const TRADING_TIMES_IN_FORCE = ['day', 'gtc', 'ioc', 'fok', 'opg', 'cls'] as const;
export const TRADING_STATUSES = ['new', 'partially_filled', 'filled', 'cancelled', 'rejected', 'expired', 'held'] as const;
export const TRADING_ORDER_CLASSES = ['simple', 'bracket', 'oco', 'oto'] as const;

/** An order's side, type and time in force, as the API takes them and the trading service checks them. */
export const TradingSide = z.enum(TRADING_SIDES);
export const TradingOrderType = z.enum(TRADING_ORDER_TYPES);
export const TradingTimeInForce = z.enum(TRADING_TIMES_IN_FORCE);

/** A positive decimal, as a JSON string ("0.015") or number (0.015). Strings keep every digit. */
export const DecimalInput = z
  .union([
    z
      .string()
      .trim()
      .regex(/^\d{1,18}(\.\d{1,18})?$/, 'must be a positive decimal number such as "1.5", without a sign or exponent'),
    z.number().refine((n) => Number.isFinite(n), 'must be a finite number'),
  ])
  .transform((v) => (typeof v === 'number' ? String(v) : v));

export const VenueId = z
  .string()
  .min(1)
  .max(40)
  .regex(/^[a-z][a-z0-9-]*$/, 'must be a venue id such as "paper"')
  .describe('A venue (GET /trading/venues): `paper`, or an external one the account has credentials for.');
export const TradingSymbol = z
  .string()
  .min(1)
  .max(20)
  .regex(/^[A-Za-z0-9./-]+$/, 'must be a symbol such as "BTC/USD" or "AAPL"')
  .describe('A symbol of the venue, such as "BTC/USD" or "AAPL".');
export const ClientOrderId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'may hold letters, digits and _ . : - only')
  .describe('Your own id for an order, unique per account and venue.');

/** An order's fields (docs/trading.md): exactly one of qty and notional, checked by `oneSize`. */
export const PlaceOrderFields = z.object({
  venue: VenueId.default('paper').describe('The venue (GET /trading/venues); `paper` by default.'),
  symbol: TradingSymbol,
  side: TradingSide.describe('buy or sell.'),
  type: TradingOrderType.default('market').describe('How it trades: market (now, at the book’s prices), limit, stop or stop_limit.'),
  qty: DecimalInput.optional().describe(
    'Quantity in the base asset, a multiple of the lot size (0.000001 on the paper venue: fractional shares too). Give exactly one of qty and notional.',
  ),
  notional: DecimalInput.optional().describe(
    'Instead of qty, for a market order: an amount of the quote asset to trade, at most 2 decimals (cents). The quantity is found as it fills, never over this amount; fees come on top.',
  ),
  price: DecimalInput.optional().describe('Limit price (limit and stop_limit), a multiple of the tick size.'),
  stopPrice: DecimalInput.optional().describe('Trigger price (stop and stop_limit).'),
  timeInForce: TradingTimeInForce.default('gtc').describe(
    'How long it stays: gtc (until cancelled), day, ioc, fok, or opg/cls (the opening or closing auction).',
  ),
  clientOrderId: ClientOrderId.optional().describe(
    'Your id for the order, unique per account and venue: a retry with the same id and order answers the original order; with another order, 409.',
  ),
});

/** An order names its size once: a quantity, or (a market order) a notional. */
export function oneSize(v: { qty?: string; notional?: string; type?: string; timeInForce?: string }, ctx: z.RefinementCtx): void {
  if (v.qty === undefined && v.notional === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['qty'],
      message: 'an order needs a quantity (qty), or, for a market order, an amount of the quote asset to trade (notional)',
    });
  else if (v.qty !== undefined && v.notional !== undefined)
    ctx.addIssue({ code: 'custom', path: ['notional'], message: 'give either qty or notional, not both' });
  else if (v.notional !== undefined && v.type !== 'market')
    ctx.addIssue({ code: 'custom', path: ['notional'], message: `only a market order takes a notional; give qty for a ${v.type} order` });
  else if (v.notional !== undefined && v.timeInForce === 'fok')
    ctx.addIssue({
      code: 'custom',
      path: ['timeInForce'],
      message: 'a notional order cannot be fok (the quantity it buys is found as it fills); use day, gtc or ioc',
    });
}

/** Linked orders and trailing stops (docs/trading.md, "Linked orders"); the service checks how they fit together. */
export const LinkedOrderFields = z.object({
  orderClass: z
    .enum(TRADING_ORDER_CLASSES)
    .default('simple')
    .describe(
      '`bracket`: a market or limit entry with takeProfit and stopLoss exits (held until the entry fills, then one cancels the other); `oto`: an entry with one of them; `oco`: a limit take-profit (takeProfit.price) and a stop-loss on the same side, the first to fill or trigger cancels the other.',
    ),
  takeProfit: z
    .object({ price: DecimalInput.describe('The take-profit leg’s limit price.') })
    .optional()
    .describe('The take-profit leg (bracket, oto, oco).'),
  stopLoss: z
    .object({
      stopPrice: DecimalInput.optional().describe('The stop-loss leg’s stop price.'),
      price: DecimalInput.optional().describe('A limit price: the stop-loss leg is then a stop_limit order.'),
      trailPrice: DecimalInput.optional().describe('Instead of stopPrice: a trailing stop-loss, this distance.'),
      trailPercent: DecimalInput.optional().describe('Or its distance in percent.'),
    })
    .optional()
    .describe('The stop-loss leg (bracket, oto, oco).'),
  trailPrice: DecimalInput.optional().describe('A trailing_stop’s distance below (a sell) or above (a buy) the best last price since it was placed.'),
  trailPercent: DecimalInput.optional().describe('Instead of trailPrice: the distance as a percent of that price (at most 2 decimals).'),
});

export const PlaceOrderBody = PlaceOrderFields.extend(LinkedOrderFields.shape).superRefine(oneSize).meta({ id: 'PlaceOrder' });

export const TradingActor = z.object({ kind: z.string(), id: z.string() }).meta({ id: 'TradingActor' });

export const TradingOrder = z
  .object({
    id: z.string(),
    clientOrderId: z.string(),
    venue: z.string(),
    symbol: z.string(),
    side: z.enum(TRADING_SIDES),
    type: z.enum(TRADING_ORDER_TYPES),
    timeInForce: z.enum(TRADING_TIMES_IN_FORCE),
    qty: z.string().describe("A notional order's: the quantity its notional bought."),
    notional: z.string().nullable().describe('The amount of the quote asset a notional order asked for; null for a quantity order.'),
    price: z.string().nullable(),
    stopPrice: z.string().nullable(),
    filledQty: z.string(),
    avgFillPrice: z.string().nullable(),
    filledNotional: z.string(),
    fees: z.string(),
    status: z.enum(TRADING_STATUSES),
    reason: z
      .string()
      .nullable()
      .describe('Why it was rejected, cancelled or expired (`insufficient_balance`, `ioc_remainder`, `fok_not_filled`, `day_ended`, …).'),
    placedBy: TradingActor,
    externalId: z.string().nullable().describe("The order's id at an external venue."),
    createdAt: z.string(),
    updatedAt: z.string(),
    orderClass: z.enum(TRADING_ORDER_CLASSES).describe('`simple`, or the linked order it belongs to (docs/trading.md, "Linked orders").'),
    parentOrderId: z.string().nullable().describe("A leg's entry (an OCO's stop-loss leg: its take-profit leg)."),
    linkedOrderId: z.string().nullable().describe("An OCO leg's other leg (a bracket's two exits are one): the first to fill or trigger cancels it."),
    trailPrice: z.string().nullable(),
    trailPercent: z.string().nullable(),
    hwm: z
      .string()
      .nullable()
      .describe("A trailing stop's high water mark (a buy's low): the best last price since it was placed; its stopPrice follows it."),
  })
  .meta({ id: 'TradingOrder' });

export const PlacedTradingOrder = TradingOrder.extend({
  legs: z.array(TradingOrder).describe("A linked order's legs as they stand after matching (empty for a simple order)."),
}).meta({ id: 'PlacedTradingOrder' });

export const TradingFill = z
  .object({
    id: z.string(),
    orderId: z.string(),
    venue: z.string(),
    symbol: z.string(),
    side: z.enum(TRADING_SIDES),
    price: z.string(),
    qty: z.string(),
    notional: z.string(),
    fee: z.string(),
    liquidity: z.enum(['maker', 'taker']),
    createdAt: z.string(),
  })
  .meta({ id: 'TradingFill' });

export const TradingBalance = z
  .object({ asset: z.string(), total: z.string(), held: z.string(), available: z.string() })
  .meta({ id: 'TradingBalance' });

export const TradingAccount = z
  .object({
    venue: z.string(),
    currency: z.string(),
    cash: z.string(),
    equity: z.string().describe('Cash plus positions at their mark price.'),
    startingCash: z.string().nullable(),
    balances: z.array(TradingBalance),
    positions: z.array(
      z.object({ symbol: z.string(), qty: z.string(), markPrice: z.string(), marketValue: z.string() }).meta({ id: 'TradingPosition' }),
    ),
    openOrders: z.array(TradingOrder),
  })
  .meta({ id: 'TradingAccount' });

export const TradingVenue = z
  .object({
    id: z.string(),
    name: z.string(),
    mode: z.enum(['paper', 'live']),
    capabilities: z
      .object({
        orderTypes: z.array(z.string()),
        timeInForce: z.array(z.string()),
        cancelAll: z.boolean(),
        clientOrderId: z.boolean(),
        fills: z.boolean(),
        orderBook: z.boolean(),
        reset: z.boolean(),
      })
      .meta({ id: 'TradingCapabilities' }),
    instruments: z
      .array(
        z
          .object({ symbol: z.string(), base: z.string(), quote: z.string(), tickSize: z.string(), lotSize: z.string() })
          .meta({ id: 'TradingInstrument' }),
      )
      .nullable()
      .describe('The instruments; null when the venue takes the symbols it lists itself.'),
  })
  .meta({ id: 'TradingVenue' });

export const TradingBook = z
  .object({
    venue: z.string(),
    symbol: z.string(),
    bids: z.array(z.object({ price: z.string(), qty: z.string() }).meta({ id: 'TradingBookLevel' })),
    asks: z.array(z.object({ price: z.string(), qty: z.string() })),
    last: z.string(),
    reference: z.string().describe("The market maker's reference price."),
  })
  .meta({ id: 'TradingBook' });

export const NotionalLimit = z
  .string()
  .trim()
  .regex(/^\d{1,15}(\.\d{1,9})?$/, 'must be a decimal amount such as "1000"');

export const SetTradingLimitsBody = z
  .object({
    maxNotionalPerOrder: NotionalLimit.nullable().default(null).describe('The most one order may be worth (quote currency); null: no cap.'),
    maxNotionalPerDay: NotionalLimit.nullable().default(null).describe("The most the agent's orders may add up to per UTC day; null: no cap."),
    symbols: z.array(TradingSymbol).max(200).nullable().default(null).describe('The symbols it may trade; null: every symbol.'),
    paperOnly: z.boolean().default(true).describe('Paper venues only (the default).'),
  })
  .meta({ id: 'SetTradingLimits' });

export const TradingLimits = z
  .object({
    agentId: z.string(),
    maxNotionalPerOrder: z.string().nullable(),
    maxNotionalPerDay: z.string().nullable(),
    symbols: z.array(z.string()).nullable(),
    paperOnly: z.boolean(),
    usedToday: z.string().describe('Notional of the agent’s orders today (UTC).'),
    setBy: TradingActor.nullable(),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: 'TradingLimits' });

export const SetVenueCredentialsBody = z
  .object({
    keyId: z.string().min(1).max(200).describe("The venue's key id (Alpaca: APCA-API-KEY-ID)."),
    secretKey: z.string().min(1).max(200).describe("The venue's secret (Alpaca: APCA-API-SECRET-KEY); never returned."),
  })
  .meta({ id: 'SetVenueCredentials' });

export const VenueCredential = z
  .object({
    venue: z.string(),
    keyId: z.string().describe('The key id, masked to its last four characters.'),
    secretLast4: z.string(),
    setBy: TradingActor,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'VenueCredential' });

export const TRADING_EVENT_TYPES = [
  'accepted',
  'activated',
  'partially_filled',
  'filled',
  'cancelled',
  'replaced',
  'expired',
  'rejected',
  'reset',
] as const;

/** One of the account's order updates (docs/trading.md, "Order updates"). */
export const TradingEvent = z
  .object({
    seq: z.number().int().describe("Its place in the account's sequence: 1, 2, 3, … with no gap."),
    id: z.string(),
    type: z.enum(TRADING_EVENT_TYPES),
    venue: z.string(),
    symbol: z.string().nullable(),
    createdAt: z.string(),
    order: TradingOrder.nullable().describe(
      'The order as it stood right after the update (filled quantity, notional, average price, status, reason); its fees and updatedAt are its current ones. Null on reset.',
    ),
    fill: z
      .object({ price: z.string(), qty: z.string(), notional: z.string(), fee: z.string(), liquidity: z.enum(['maker', 'taker']) })
      .meta({ id: 'TradingEventFill' })
      .nullable()
      .describe('The fill, on partially_filled and filled.'),
    replacedBy: z.string().nullable().describe('The new order, on replaced.'),
    balances: z
      .array(TradingBalance)
      .nullable()
      .describe(
        "The account's balances of the order's two assets once the update was made (all of them on reset); null at an external venue, which keeps the balances.",
      ),
  })
  .meta({ id: 'TradingEvent' });
