import { DomainError, newId } from '@svc/kit';

import { isAuction, isStopType, newBookOrder } from '../engine/book.js';
import type { OrderRow } from '../orders/store.js';
import { notionalToUnits } from '../orders/symbols.js';
import { linkLegs } from './links.js';
import type { PlaceInput } from './place-input.js';
import { insufficient, notionalTooSmall, type Session, track } from './session.js';

/**
 * A group of orders on one book (venue.ts, group commit): matched one after the other in arrival
 * order inside the book transaction, each answered after the commit.
 */

/** An order waiting for its book's next group, with the trace headers of its request (for its events). */
export interface Job {
  input: PlaceInput;
  headers: Record<string, string>;
  resolve(v: { row: OrderRow; replayed: boolean }): void;
  reject(err: unknown): void;
}

/** What a group answers one order: its result, or the error that refused it alone. */
export interface Outcome {
  value?: { row: OrderRow; replayed: boolean } | null;
  error?: unknown;
}

/** At most this many orders in one transaction. */
const MAX_GROUP = 64;

/**
 * Takes the next group off a book's queue. A client order id twice in one group: the later one
 * waits for the next group (and replays the first), so it stays at the queue's head.
 */
export function nextGroup(queue: Job[]): Job[] {
  const batch: Job[] = [];
  const later: Job[] = [];
  const seen = new Set<string>();
  for (const job of queue.splice(0, MAX_GROUP)) {
    const key = `${job.input.accountId}\u0000${job.input.clientOrderId}`;
    if (seen.has(key)) later.push(job);
    else {
      seen.add(key);
      batch.push(job);
    }
  }
  queue.unshift(...later);
  return batch;
}

/**
 * Matches the group's orders one after the other; an order refused on its own is answered its
 * error (on the optimistic path it is thrown instead, and the group runs on the locked path:
 * refusals are decided on fresh balances only). `placed` maps each placed order's place in the group to its id (its row comes from
 * the session's write); a replayed one is answered the order its client order id already names.
 */
export async function matchGroup(s: Session, batch: Job[], optimistic: boolean): Promise<{ outcomes: Outcome[]; placed: Map<number, string> }> {
  const { q } = s;
  const spec = s.entry.spec;
  const existing = new Map(s.existing.map((r) => [`${r.account_id}\u0000${r.client_order_id}`, r]));
  const book = s.entry.book;
  const outcomes: Outcome[] = [];
  const placed = new Map<number, string>();
  for (const [i, { input, headers }] of batch.entries()) {
    const prior = existing.get(`${input.accountId}\u0000${input.clientOrderId}`);
    if (prior) {
      outcomes.push({ value: { row: prior, replayed: true } });
      continue;
    }
    // A notional order becomes a market order for the lots its notional pays for on this book, now.
    const fillable = input.notional ? book.fillableForNotional(input.side, input.accountId, input.notional.tickLots) : null;
    const qty = fillable ? fillable.qty : input.qty;
    const o = newBookOrder({
      id: newId('ord'),
      owner: input.accountId,
      agent: input.actor.kind === 'agent' ? input.actor.id : undefined,
      side: input.side,
      type: input.type,
      tif: input.tif,
      qty,
      price: input.price,
      stopPrice: input.stopPrice,
      trailTicks: input.trailTicks,
      trailBps: input.trailBps,
    });
    const legs = linkLegs(o, input);
    // A trailing stop's trigger starts a trail away from the last price: it waits.
    const waits =
      o.type === 'trailing_stop' ||
      isAuction(o) ||
      (isStopType(o) && !(o.side === 'buy' ? book.lastPrice >= o.stopPrice! : book.lastPrice <= o.stopPrice!));
    // An agent's usage is counted in a savepoint: an order refused afterwards counts nothing.
    if (input.limits) await q.query('SAVEPOINT agent_limits');
    try {
      if (qty === 0) throw notionalTooSmall(spec, book, input, fillable!.selfTrade);
      const preview = waits ? null : book.preview(o);
      if (input.limits) {
        // A notional order counts its notional (what it may spend), whatever it fills; a trailing stop its quantity at the last price.
        const ticks = o.type === 'market' ? preview!.notional : o.qty * (o.price ?? o.stopPrice ?? book.lastPrice);
        await input.limits(q, input.notional ? input.notional.units : notionalToUnits(spec, ticks));
        // Every leg is checked against the agent's limits too, at its own price (counted once: the entry's).
        for (const [j, l] of legs.entries())
          await input.limits(q, notionalToUnits(spec, l.qty * (l.price ?? l.stopPrice ?? book.lastPrice)), input.legs![j]!.role);
      }
      if (s.ledger.check(o, preview)) throw insufficient(spec, o, s.ledger);
      const result = book.submit(o, s.ledger);
      if (o.status === 'rejected') throw insufficient(spec, o, s.ledger);
      // A notional order the book ran out for (or its own order stopped) did not spend its notional: it expires, as a market order's rest does.
      if (fillable?.exhausted && o.status === 'filled') {
        o.status = 'expired';
        o.reason = fillable.selfTrade ? 'self_trade_prevented' : 'no_liquidity';
      }
      for (const x of result.changed) track(s, x);
      s.timeline.step(result.changed, { accepted: [o, ...legs], activated: result.activated });
      if (input.limits) await q.query('RELEASE SAVEPOINT agent_limits');
    } catch (err) {
      if (!(err instanceof DomainError) || optimistic) throw err;
      if (input.limits) await q.query('ROLLBACK TO SAVEPOINT agent_limits');
      outcomes.push({ error: err });
      continue;
    }
    s.inserted.set(o.id, {
      clientOrderId: input.clientOrderId,
      requestHash: input.requestHash,
      actor: input.actor,
      headers,
      notional: input.notional?.text ?? null,
      orderClass: input.orderClass,
    });
    for (const l of legs)
      s.inserted.set(l.id, {
        clientOrderId: l.id,
        requestHash: input.requestHash,
        actor: input.actor,
        headers,
        notional: null,
        orderClass: input.orderClass,
        parentId: o.id,
      });
    placed.set(i, o.id);
    outcomes.push({ value: null });
  }
  return { outcomes, placed };
}
