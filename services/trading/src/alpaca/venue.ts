import { type Actor, DomainError, enqueueEvent, newId, type Queryable, type Sql } from '@svc/kit';

import type { VenueCredentials } from '../orders/credentials.js';
import { type OrderRow, SCHEMA, type TradingStore } from '../orders/store.js';
import { formatUnits, scaled } from '../orders/symbols.js';
import type { AlpacaClient, AlpacaCredentials, AlpacaOrder } from './client.js';

/**
 * The Alpaca venue: orders are sent to Alpaca's Trading API with the credentials the account
 * stored, and kept here too (for idempotency, listing and events); their state is refreshed from
 * Alpaca when read. Alpaca enforces client order ids as well: a retry after a lost answer finds
 * the order Alpaca already has by its client order id instead of placing a second one.
 */

export const ALPACA = 'alpaca';

/** Alpaca's order statuses in the platform's six. */
export function statusOf(s: string): string {
  switch (s) {
    case 'filled':
      return 'filled';
    case 'partially_filled':
      return 'partially_filled';
    case 'canceled':
    case 'pending_cancel':
    case 'replaced':
      return 'cancelled';
    case 'expired':
    case 'done_for_day':
      return 'expired';
    case 'rejected':
    case 'suspended':
      return 'rejected';
    default:
      return 'new';
  }
}

const OPEN = new Set(['new', 'partially_filled']);

/** qty × price in 10⁻⁹ units. */
export function notionalUnits(qty: string, price: string): bigint {
  return (scaled(qty, 9)! * scaled(price, 9)!) / 10n ** 9n;
}

export interface AlpacaPlace {
  accountId: string;
  actor: Actor;
  symbol: string;
  side: string;
  type: string;
  tif: string;
  /** Exactly one of qty and notional. */
  qty?: string;
  notional?: string;
  price?: string;
  stopPrice?: string;
  clientOrderId: string;
  requestHash: string;
}

export class AlpacaVenue {
  constructor(
    private readonly deps: {
      sql: Sql;
      store: TradingStore;
      client: AlpacaClient;
      credentials: VenueCredentials;
      kick(): void;
      /** Told after a commit of the account whose order updates moved on (the live streams). */
      published?(seqs: Array<{ accountId: string; seq: number }>): void;
    },
  ) {}

  /** Appends the order's update to the account's sequence (no balances: Alpaca keeps them); answers its seq. */
  private update(q: Queryable, r: OrderRow, type: string): Promise<number> {
    return this.deps.store.appendEvent(q, {
      accountId: r.account_id,
      id: newId('evt'),
      type,
      venue: ALPACA,
      symbol: r.symbol,
      orderId: r.id,
      data: { filledQty: r.filled_qty, filledNotional: r.filled_notional, status: r.status, reason: r.reason },
      balances: null,
    });
  }

  async creds(accountId: string): Promise<AlpacaCredentials> {
    const c = await this.deps.credentials.open(accountId, ALPACA);
    if (!c)
      throw new DomainError(
        'precondition_failed',
        'venue_credentials_missing',
        'The account has no Alpaca credentials: a person stores them with PUT /trading/credentials/alpaca.',
      );
    return c;
  }

  /** Sends the order (or finds the one Alpaca already has under its client order id) and records it. */
  async place(input: AlpacaPlace): Promise<{ row: OrderRow; replayed: boolean }> {
    const seqs: number[] = [];
    const creds = await this.creds(input.accountId);
    let order: AlpacaOrder;
    try {
      order = await this.deps.client.placeOrder(creds, {
        symbol: input.symbol,
        ...(input.notional !== undefined ? { notional: input.notional } : { qty: input.qty }),
        side: input.side,
        type: input.type,
        time_in_force: input.tif,
        ...(input.price !== undefined ? { limit_price: input.price } : {}),
        ...(input.stopPrice !== undefined ? { stop_price: input.stopPrice } : {}),
        client_order_id: input.clientOrderId,
      });
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'venue_rejected' && /client_order_id/i.test(err.message))) throw err;
      order = await this.deps.client.orderByClientId(creds, input.clientOrderId);
    }
    try {
      const row = await this.deps.sql.tx(async (q) => {
        const r = await this.deps.store.insertOrder(q, {
          id: newId('ord'),
          account_id: input.accountId,
          venue: ALPACA,
          symbol: input.symbol,
          client_order_id: input.clientOrderId,
          request_hash: input.requestHash,
          side: input.side as OrderRow['side'],
          type: input.type as OrderRow['type'],
          time_in_force: input.tif as OrderRow['time_in_force'],
          // A notional order's quantity is what Alpaca filled (0 until then).
          qty: input.qty ?? quantityOf(order),
          notional: input.notional ?? null,
          price: input.price ?? null,
          stop_price: input.stopPrice ?? null,
          order_class: 'simple',
          parent_id: null,
          sibling_id: null,
          trail_price: null,
          trail_percent: null,
          hwm: null,
          ...fillsOf(order),
          fees: '0',
          hold_units: '0',
          status: statusOf(order.status),
          reason: order.status === 'rejected' ? 'rejected_by_venue' : null,
          triggered: false,
          seq: 0,
          placed_by: input.actor,
          external_id: order.id,
        });
        await enqueueEvent(q, SCHEMA, {
          subject: 'trading.order.placed',
          accountId: input.accountId,
          data: { id: r.id, venue: ALPACA, externalId: order.id },
        });
        seqs.push(await this.update(q, { ...r, status: 'new', filled_qty: '0', filled_notional: '0' }, 'accepted'));
        if (r.status !== 'new') seqs.push(await this.update(q, r, r.status));
        return r;
      });
      this.deps.kick();
      this.deps.published?.([{ accountId: input.accountId, seq: Math.max(...seqs) }]);
      return { row, replayed: false };
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
      const existing = await this.deps.store.orderByClientId(this.deps.sql, input.accountId, ALPACA, input.clientOrderId);
      if (!existing) throw err;
      return { row: existing, replayed: true };
    }
  }

  /** The order with its state refreshed from Alpaca while it is open; the read stops when `signal` (its caller's) aborts. */
  async refresh(row: OrderRow, signal?: AbortSignal): Promise<OrderRow> {
    if (!OPEN.has(row.status) || !row.external_id) return row;
    const order = await this.deps.client.getOrder(await this.creds(row.account_id), row.external_id, signal);
    return this.sync(row, order);
  }

  private async sync(row: OrderRow, order: AlpacaOrder): Promise<OrderRow> {
    const status = statusOf(order.status);
    const f = fillsOf(order);
    if (status === row.status && f.filled_qty === row.filled_qty) return row;
    let seq = 0;
    const updated = await this.deps.sql.tx(async (q) => {
      const r = await this.deps.store.syncExternal(q, row.id, {
        status,
        ...f,
        qty: row.notional !== null ? quantityOf(order) : row.qty,
        reason: status === 'cancelled' ? 'cancelled_at_venue' : row.reason,
      });
      await enqueueEvent(q, SCHEMA, { subject: `trading.order.${status}`, accountId: row.account_id, data: { id: row.id, venue: ALPACA, status } });
      seq = await this.update(q, r, status === 'new' ? 'accepted' : status);
      return r;
    });
    this.deps.kick();
    this.deps.published?.([{ accountId: row.account_id, seq }]);
    return updated;
  }

  async cancel(row: OrderRow): Promise<OrderRow> {
    const creds = await this.creds(row.account_id);
    try {
      await this.deps.client.cancelOrder(creds, row.external_id!);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'venue_rejected')
        throw new DomainError('conflict', 'order_not_open', `The order can no longer be cancelled (${err.message}).`);
      throw err;
    }
    return this.sync(row, await this.deps.client.getOrder(creds, row.external_id!));
  }

  /** The account and its positions at Alpaca; the reads stop when `signal` (their caller's) aborts. */
  async account(accountId: string, signal?: AbortSignal) {
    const creds = await this.creds(accountId);
    const [account, positions] = await Promise.all([this.deps.client.account(creds, signal), this.deps.client.positions(creds, signal)]);
    return { account, positions };
  }
}

/** The order's quantity as Alpaca has it (a notional order's: what it filled until Alpaca sets it). */
function quantityOf(o: AlpacaOrder): string {
  return o.qty && Number(o.qty) > 0 ? o.qty : o.filled_qty && Number(o.filled_qty) > 0 ? o.filled_qty : '0';
}

function fillsOf(o: AlpacaOrder): { filled_qty: string; filled_notional: string } {
  const qty = o.filled_qty && Number(o.filled_qty) > 0 ? o.filled_qty : '0';
  const notional = qty !== '0' && o.filled_avg_price ? formatUnits(notionalUnits(qty, o.filled_avg_price)) : '0';
  return { filled_qty: qty, filled_notional: notional };
}
