import { type BookOrder, type Fill, isStopType, type MatchHooks, type Preview } from '../engine/book.js';
import { MARKET_MAKER } from '../engine/market-maker.js';
import { feeOf, lotsToUnits, notionalToUnits, type Spec } from '../orders/symbols.js';

/**
 * The money side of one book transaction: the balances of every account the book can touch (the
 * taker, and the owners of resting orders and stops), updated as the engine reports fills, and the
 * holds that back open orders. Amounts are bigint units (10⁻⁹ of an asset). At the end the
 * deltas are written in one go (store.writeGroup), where a CHECK keeps every balance covering its
 * holds.
 */

export interface Fees {
  takerBps: number;
  makerBps: number;
}

interface Balance {
  total: bigint;
  held: bigint;
  dTotal: bigint;
  dHeld: bigint;
  /** Whether the row exists (loaded), or is to be created. */
  stored: boolean;
}

/** One side of a fill as it will be recorded. */
export interface FillRecord {
  accountId: string;
  order: BookOrder;
  seq: number;
  price: number;
  qty: number;
  notional: bigint;
  fee: bigint;
  liquidity: 'maker' | 'taker';
}

export class Ledger implements MatchHooks {
  private readonly balances = new Map<string, Balance>();
  readonly fills: FillRecord[] = [];
  /** Fees charged per order in this transaction. */
  readonly feesAdded = new Map<string, bigint>();
  /** Balance rows written even without a change (their value read afresh by the write). */
  private readonly touched = new Set<string>();
  /** The engine's `release` hook: agents' limits when an order leaves its wait (paper/releases.ts); unset, every order goes on. */
  release?: MatchHooks['release'];

  constructor(
    private readonly spec: Spec,
    private readonly fees: Fees,
    /** The hold each open order backs now (order id → units), the book's, kept across transactions. */
    readonly holds: Map<string, bigint>,
  ) {}

  load(rows: Array<{ account_id: string; asset: string; total: string; held: string }>): void {
    for (const r of rows)
      this.balances.set(key(r.account_id, r.asset), { total: BigInt(r.total), held: BigInt(r.held), dTotal: 0n, dHeld: 0n, stored: true });
  }

  /** One balance as a cache holds it (paper/venue.ts, the optimistic path). */
  loadUnits(accountId: string, asset: string, total: bigint, held: bigint): void {
    this.balances.set(key(accountId, asset), { total, held, dTotal: 0n, dHeld: 0n, stored: true });
  }

  private bal(accountId: string, asset: string): Balance {
    const k = key(accountId, asset);
    let b = this.balances.get(k);
    if (!b) this.balances.set(k, (b = { total: 0n, held: 0n, dTotal: 0n, dHeld: 0n, stored: false }));
    return b;
  }

  available(accountId: string, asset: string): bigint {
    const b = this.bal(accountId, asset);
    return b.total - b.held;
  }

  private add(accountId: string, asset: string, total: bigint, held: bigint): void {
    const b = this.bal(accountId, asset);
    b.total += total;
    b.held += held;
    b.dTotal += total;
    b.dHeld += held;
  }

  /** What an open order must keep held: a buy its remaining cost at its limit with the larger fee, a sell its remaining quantity. */
  holdFor(o: BookOrder): bigint {
    if (o.status !== 'new' && o.status !== 'partially_filled') return 0n;
    // An OCO's waiting stop leg holds nothing while its other leg is open and holds: one of them can trade (the engine cancels the other).
    const s = o.sibling;
    if (s && isStopType(o) && !o.triggered && (s.status === 'new' || s.status === 'partially_filled')) return 0n;
    const left = o.qty - o.filled;
    if (o.side === 'sell') return lotsToUnits(this.spec, left);
    if (o.price === undefined) return 0n; // a buy stop waits without a hold; it is checked when it fires
    const cost = notionalToUnits(this.spec, left * o.price);
    return cost + feeOf(cost, Math.max(this.fees.takerBps, this.fees.makerBps));
  }

  /**
   * What an order needs available to be accepted: a sell its whole quantity; a buy the cost of what
   * fills now with the taker fee (`now`), plus the hold of what will rest (`rest`).
   */
  need(o: BookOrder, preview: Preview | null): { asset: string; now: bigint; rest: bigint } {
    if (o.side === 'sell') return { asset: this.spec.base, now: lotsToUnits(this.spec, o.qty), rest: 0n };
    let cost = preview ? notionalToUnits(this.spec, preview.notional) : 0n;
    // A market buy is for its whole quantity: what the book cannot fill now is priced at the worst level reached.
    if (preview && o.price === undefined && preview.qty < o.qty) cost += notionalToUnits(this.spec, (o.qty - preview.qty) * preview.worst);
    const mayRest = (o.type === 'limit' || o.type === 'stop_limit') && (o.tif === 'gtc' || o.tif === 'day' || !preview);
    const restLots = o.qty - (preview?.qty ?? 0);
    let rest = 0n;
    if (mayRest && restLots > 0 && o.price !== undefined) {
      const c = notionalToUnits(this.spec, restLots * o.price);
      rest = c + feeOf(c, Math.max(this.fees.takerBps, this.fees.makerBps));
    }
    return { asset: this.spec.quote, now: cost + feeOf(cost, this.fees.takerBps), rest };
  }

  /** Why `o` cannot be accepted now, or null. */
  check(o: BookOrder, preview: Preview | null): string | null {
    if (o.owner === MARKET_MAKER) return null;
    const n = this.need(o, preview);
    return n.now + n.rest > this.available(o.owner, n.asset) ? 'insufficient_balance' : null;
  }

  /** The engine's admission hook (an order about to trade, or a stop that fired). */
  admit(o: BookOrder, preview: Preview): string | null {
    if (o.owner === MARKET_MAKER) return null;
    const n = this.need(o, preview);
    // A stop that fired already holds for itself (a sell its quantity, a buy stop-limit its cost): that hold is its own to use.
    if (n.now + n.rest > this.available(o.owner, n.asset) + (this.holds.get(o.id) ?? 0n)) return 'insufficient_balance';
    // Held now, so that a stop firing later in the same cascade sees it; made exact by syncHold.
    this.setHold(o, n.asset, o.side === 'buy' ? n.rest : n.now);
    return null;
  }

  /** The engine closed an order itself (an OCO's other leg): its hold goes at once, before what triggered it is admitted. */
  closed(o: BookOrder): void {
    this.syncHold(o);
  }

  /** The engine's fill hook: moves cash and the asset between buyer and seller, charges fees, follows the maker's hold. */
  fill(f: Fill): void {
    const units = notionalToUnits(this.spec, f.qty * f.price);
    const amount = lotsToUnits(this.spec, f.qty);
    for (const [o, liquidity] of [
      [f.taker, 'taker'],
      [f.maker, 'maker'],
    ] as const) {
      if (o.owner === MARKET_MAKER) continue;
      const fee = feeOf(units, liquidity === 'taker' ? this.fees.takerBps : this.fees.makerBps);
      if (o.side === 'buy') {
        this.add(o.owner, this.spec.quote, -(units + fee), 0n);
        this.add(o.owner, this.spec.base, amount, 0n);
      } else {
        this.add(o.owner, this.spec.base, -amount, 0n);
        this.add(o.owner, this.spec.quote, units - fee, 0n);
      }
      this.feesAdded.set(o.id, (this.feesAdded.get(o.id) ?? 0n) + fee);
      this.fills.push({ accountId: o.owner, order: o, seq: f.seq, price: f.price, qty: f.qty, notional: units, fee, liquidity });
      if (liquidity === 'maker') this.syncHold(o);
    }
  }

  private setHold(o: BookOrder, asset: string, units: bigint): void {
    const before = this.holds.get(o.id) ?? 0n;
    if (units === before) return;
    this.add(o.owner, asset, 0n, units - before);
    if (units === 0n) this.holds.delete(o.id);
    else this.holds.set(o.id, units);
  }

  /** Makes an order's hold exactly what its state needs (zero once it is closed). */
  syncHold(o: BookOrder): void {
    if (o.owner === MARKET_MAKER) return;
    this.setHold(o, o.side === 'buy' ? this.spec.quote : this.spec.base, this.holdFor(o));
  }

  /** How much this transaction changed a balance so far. */
  deltaOf(accountId: string, asset: string): { total: bigint; held: bigint } {
    const b = this.balances.get(key(accountId, asset));
    return b ? { total: b.dTotal, held: b.dHeld } : { total: 0n, held: 0n };
  }

  /**
   * Makes a stored balance row part of the write even if nothing changes it: the write then locks it
   * and reads it as committed last (store.writeGroup: the order updates' balances).
   */
  touch(accountId: string, asset: string): void {
    const k = key(accountId, asset);
    if (this.balances.get(k)?.stored) this.touched.add(k);
  }

  /** The balance changes to write (touched rows included, unchanged); `stored` when the row exists. */
  deltas(): Array<{ accountId: string; asset: string; total: bigint; held: bigint; stored: boolean }> {
    const out: Array<{ accountId: string; asset: string; total: bigint; held: bigint; stored: boolean }> = [];
    for (const [k, b] of this.balances) {
      if (b.dTotal === 0n && b.dHeld === 0n && !this.touched.has(k)) continue;
      const [accountId, asset] = k.split('\u0000') as [string, string];
      out.push({ accountId, asset, total: b.dTotal, held: b.dHeld, stored: b.stored });
    }
    return out;
  }
}

const key = (accountId: string, asset: string) => `${accountId}\u0000${asset}`;
