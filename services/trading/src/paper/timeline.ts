import type { BookOrder } from '../engine/book.js';
import { MARKET_MAKER } from '../engine/market-maker.js';
import type { GroupWrite } from '../orders/store.js';
import { formatUnits, lotsToString, notionalToUnits, type Spec, ticksToString } from '../orders/symbols.js';
import type { Ledger } from './ledger.js';

/**
 * The account's order updates of one book transaction (docs/trading.md, "Order updates"), in the
 * order they happened: an order accepted, each fill (the order then `partially_filled` or
 * `filled`), an order cancelled, replaced, expired or rejected. The transaction is cut into steps
 * (an order's submission with everything it set off, a cancel, the market maker's move, the day's
 * end); after each step the holds of the orders it changed are made exact, and every event of the
 * step carries the account's balances as that step left them. They are written with the change
 * (store.writeGroup), numbered there in each account's gap-free sequence.
 */

export type TradingEventType = 'accepted' | 'activated' | 'partially_filled' | 'filled' | 'cancelled' | 'replaced' | 'expired' | 'rejected';

/** What an event keeps of its order (the rest is the order's own row) and of its fill. */
export interface EventData {
  filledQty: string;
  filledNotional: string;
  status: string;
  reason: string | null;
  fill?: { price: string; qty: string; notional: string; fee: string; liquidity: 'maker' | 'taker' };
  replacedBy?: string;
}

interface Balances {
  baseTotal: bigint;
  baseHeld: bigint;
  quoteTotal: bigint;
  quoteHeld: bigint;
}

interface Entry {
  accountId: string;
  type: TradingEventType;
  orderId: string;
  data: EventData;
  /** The account's balance changes in this transaction (base and quote asset) once the event's step was done. */
  at: Balances;
}

const TERMINAL = new Set(['cancelled', 'expired', 'rejected']);

export class Timeline {
  private readonly entries: Entry[] = [];
  private fillsSeen = 0;

  constructor(
    private readonly spec: Spec,
    private readonly ledger: Ledger,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  private state(o: BookOrder, filled: number, notional: number, status: string, reason: string | null): EventData {
    return {
      filledQty: lotsToString(this.spec, filled),
      filledNotional: formatUnits(notionalToUnits(this.spec, notional)),
      status,
      reason,
    };
  }

  /**
   * Records one step: `accepted` (a new order, as accepted, before it traded; a bracket's legs after
   * it, `held`), `activated` (held legs that went live when their entry closed), the fills the
   * ledger saw since the last step (each with its order's state right after it), then the orders
   * of `changed` that stopped without filling. With `replaced`, that order's stop is `replaced`.
   */
  step(
    changed: Iterable<BookOrder | null>,
    opts: { accepted?: BookOrder[]; activated?: BookOrder[]; replaced?: BookOrder } = {},
  ): EventData | undefined {
    const orders = new Set<BookOrder>();
    for (const o of changed) {
      if (!o || o.owner === MARKET_MAKER) continue;
      orders.add(o);
      this.ledger.syncHold(o);
    }
    const pending: Array<Omit<Entry, 'at'>> = [];
    for (const a of opts.accepted ?? [])
      pending.push({ accountId: a.owner, type: 'accepted', orderId: a.id, data: this.state(a, 0, 0, a.parent ? 'held' : 'new', null) });
    const fills = this.ledger.fills.slice(this.fillsSeen);
    this.fillsSeen = this.ledger.fills.length;
    // Each order's state after each of its fills: walked back from its state now.
    const after = new Map<BookOrder, { filled: number; notional: number }>();
    const states = new Array<{ filled: number; notional: number }>(fills.length);
    for (let i = fills.length - 1; i >= 0; i--) {
      const f = fills[i]!;
      const now = after.get(f.order) ?? { filled: f.order.filled, notional: f.order.notional };
      states[i] = now;
      after.set(f.order, { filled: now.filled - f.qty, notional: now.notional - f.qty * f.price });
    }
    fills.forEach((f, i) => {
      const s = states[i]!;
      // Filled by this fill (a notional order that then expired for want of liquidity was not).
      const status = s.filled === f.order.qty && f.order.status === 'filled' ? 'filled' : 'partially_filled';
      const data = this.state(f.order, s.filled, s.notional, status, null);
      data.fill = {
        price: ticksToString(this.spec, f.price),
        qty: lotsToString(this.spec, f.qty),
        notional: formatUnits(f.notional),
        fee: formatUnits(f.fee),
        liquidity: f.liquidity,
      };
      pending.push({ accountId: f.accountId, type: status, orderId: f.order.id, data });
    });
    // A held leg went live when its entry closed: after the entry's last fill here (before the leg's own fills).
    for (const a of opts.activated ?? []) {
      if (a.owner === MARKET_MAKER) continue;
      let at = pending.length;
      for (let i = pending.length - 1; i >= 0; i--)
        if (pending[i]!.orderId === a.parent?.id && pending[i]!.data.fill) {
          at = i + 1;
          break;
        }
      pending.splice(at, 0, { accountId: a.owner, type: 'activated', orderId: a.id, data: this.state(a, 0, 0, 'new', null) });
    }
    let replaced: EventData | undefined;
    for (const o of orders) {
      if (!TERMINAL.has(o.status)) continue;
      const data = this.state(o, o.filled, o.notional, o.status, o.reason);
      if (o === opts.replaced) replaced = data;
      pending.push({ accountId: o.owner, type: o === opts.replaced ? 'replaced' : (o.status as TradingEventType), orderId: o.id, data });
    }
    const at = new Map<string, Balances>();
    for (const e of pending) {
      let b = at.get(e.accountId);
      if (!b) {
        const base = this.ledger.deltaOf(e.accountId, this.spec.base);
        const quote = this.ledger.deltaOf(e.accountId, this.spec.quote);
        at.set(e.accountId, (b = { baseTotal: base.total, baseHeld: base.held, quoteTotal: quote.total, quoteHeld: quote.held }));
      }
      this.entries.push({ ...e, at: b });
    }
    return replaced;
  }

  /** The accounts with events: their quote balance is read afresh by the write (store.writeGroup). */
  accounts(): string[] {
    return [...new Set(this.entries.map((e) => e.accountId))].sort();
  }

  /**
   * The events as the write takes them: each with its rank in its account's events of this write
   * and what changed its balances after it (the write subtracts that from the balances it leaves).
   */
  rows(newId: () => string): GroupWrite['orderEvents'] {
    const ranks = new Map<string, number>();
    const out: GroupWrite['orderEvents'] = {
      base: this.spec.base,
      quote: this.spec.quote,
      accounts: [],
      ranks: [],
      ids: [],
      types: [],
      orderIds: [],
      data: [],
      laterBaseTotal: [],
      laterBaseHeld: [],
      laterQuoteTotal: [],
      laterQuoteHeld: [],
      seqAccounts: [],
      seqCounts: [],
    };
    for (const e of this.entries) {
      const rank = (ranks.get(e.accountId) ?? 0) + 1;
      ranks.set(e.accountId, rank);
      const base = this.ledger.deltaOf(e.accountId, this.spec.base);
      const quote = this.ledger.deltaOf(e.accountId, this.spec.quote);
      out.accounts.push(e.accountId);
      out.ranks.push(rank);
      out.ids.push(newId());
      out.types.push(e.type);
      out.orderIds.push(e.orderId);
      out.data.push(JSON.stringify(e.data));
      out.laterBaseTotal.push((base.total - e.at.baseTotal).toString());
      out.laterBaseHeld.push((base.held - e.at.baseHeld).toString());
      out.laterQuoteTotal.push((quote.total - e.at.quoteTotal).toString());
      out.laterQuoteHeld.push((quote.held - e.at.quoteHeld).toString());
    }
    for (const [accountId, n] of [...ranks].sort(([x], [y]) => (x < y ? -1 : 1))) {
      out.seqAccounts.push(accountId);
      out.seqCounts.push(n);
    }
    return out;
  }
}
