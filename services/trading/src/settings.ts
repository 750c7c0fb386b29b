import { z } from 'zod';

import { defineSettings, type Kek, parseKeks } from '@svc/kit';

import { parseUnits } from './orders/symbols.js';

/**
 * The trading service's settings (docs/trading.md):
 * - SVC_TRADING_PAPER_CASH: the starting cash of a paper account, in USD (default 100000);
 * - SVC_TRADING_PAPER_TAKER_FEE_BPS / SVC_TRADING_PAPER_MAKER_FEE_BPS: paper fees in basis points (10 and 5);
 * - SVC_TRADING_PAPER_SEED: the seed of the market maker's random walk (default 42);
 * - SVC_TRADING_PAPER_TICK_MS: how often the reference price takes a step (default 1000 ms);
 * - SVC_TRADING_PAPER_SESSION: the equities' regular session, `HH:MM-HH:MM` in UTC (default 13:30-20:00),
 *   with an opening and a closing auction (`opg`, `cls` orders);
 * - SVC_TRADING_PAPER_SESSION_CYCLE_MS: for tests and development, a compressed trading day of this
 *   many ms (open at its start, close at its middle) instead of UTC days; 0 (default) for real days;
 * - SVC_TRADING_ALPACA_URL: Alpaca's Trading API base URL (default its paper endpoint,
 *   https://paper-api.alpaca.markets); `off` removes the venue;
 * - SVC_TRADING_ALPACA_MODE: `paper` (default) or `live`: what agents' `paperOnly` limit sees;
 * - SVC_TRADING_KEK: KEKs sealing venue credentials, `<id>:<32 bytes base64>`, comma-separated,
 *   the first current; unset, one is generated into `<SVC_DATA_DIR>/trading-kek` (0600).
 */
export const tradingSettingsSchema = defineSettings({
  SVC_TRADING_PAPER_CASH: z
    .string()
    .regex(/^\d{1,12}(\.\d{1,9})?$/, 'must be a non-negative decimal amount of USD')
    .default('100000'),
  SVC_TRADING_PAPER_TAKER_FEE_BPS: z.coerce.number().int().min(0).max(1000).default(10),
  SVC_TRADING_PAPER_MAKER_FEE_BPS: z.coerce.number().int().min(0).max(1000).default(5),
  SVC_TRADING_PAPER_SEED: z.coerce.number().int().min(0).max(0xffffffff).default(42),
  SVC_TRADING_PAPER_TICK_MS: z.coerce.number().int().min(10).default(1000),
  SVC_TRADING_PAPER_SESSION: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM-HH:MM (UTC)')
    .default('13:30-20:00'),
  SVC_TRADING_PAPER_SESSION_CYCLE_MS: z.coerce.number().int().min(0).default(0),
  SVC_TRADING_ALPACA_URL: z
    .union([z.literal('off'), z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, or off' })])
    .default('https://paper-api.alpaca.markets'),
  SVC_TRADING_ALPACA_MODE: z.enum(['paper', 'live']).default('paper'),
  SVC_TRADING_KEK: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseKeks(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    })
    .optional(),
});

export interface TradingSettings {
  paper: {
    startingCash: string;
    fees: { takerBps: number; makerBps: number };
    seed: number;
    tickMs: number;
    sessions: { openMinute: number; closeMinute: number; cycleMs: number };
  };
  alpaca: { url: string; mode: 'paper' | 'live' } | null;
  keks?: Kek[];
}

export function tradingSettings(env: z.output<typeof tradingSettingsSchema>): TradingSettings {
  parseUnits(env.SVC_TRADING_PAPER_CASH);
  return {
    paper: {
      startingCash: env.SVC_TRADING_PAPER_CASH,
      fees: { takerBps: env.SVC_TRADING_PAPER_TAKER_FEE_BPS, makerBps: env.SVC_TRADING_PAPER_MAKER_FEE_BPS },
      seed: env.SVC_TRADING_PAPER_SEED,
      tickMs: env.SVC_TRADING_PAPER_TICK_MS,
      sessions: { ...sessionMinutes(env.SVC_TRADING_PAPER_SESSION), cycleMs: env.SVC_TRADING_PAPER_SESSION_CYCLE_MS },
    },
    alpaca: env.SVC_TRADING_ALPACA_URL === 'off' ? null : { url: env.SVC_TRADING_ALPACA_URL, mode: env.SVC_TRADING_ALPACA_MODE },
    keks: env.SVC_TRADING_KEK,
  };
}

function sessionMinutes(v: string): { openMinute: number; closeMinute: number } {
  const [open, close] = v.split('-').map((x) => Number(x.slice(0, 2)) * 60 + Number(x.slice(3)));
  return { openMinute: open!, closeMinute: close! };
}
