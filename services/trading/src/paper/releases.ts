import type { Queryable } from '@svc/kit';

import { type BookOrder, isAuction, isStopType, type OrderBook } from '../engine/book.js';
import { agentKey, limitsOf, releaseRefusal } from '../orders/limits.js';
import { notionalToUnits, type Spec } from '../orders/symbols.js';
import type { Ledger } from './ledger.js';

/**
 * Agents' limits when an order leaves its wait (docs/trading.md, "Agents' limits"): a bracket's or
 * OTO's held leg going live, a stop or trailing stop whose trigger was reached, an order at its
 * auction. The limits of every agent with such an order on the book (and of the agents placing
 * orders in this transaction, whose legs can go live at once) are read when the transaction opens
 * the book; the engine asks them (MatchHooks.release, the ledger's) as each order goes on, and one
 * that would break them is rejected with `trading_limit_exceeded:<limit>`, never executed.
 */

/** An order that waits: a held leg, an untriggered stop, an order for an auction. */
const waits = (o: BookOrder) => o.status === 'held' || isAuction(o) || (isStopType(o) && !o.triggered);

/** Reads the limits of the agents whose orders may leave their wait and sets the ledger's `release`; nothing to read, none is set. */
export async function guardReleases(
  q: Queryable,
  spec: Spec,
  book: OrderBook,
  ledger: Ledger,
  placing: Array<{ accountId: string; agentId: string }>,
): Promise<void> {
  const agents = new Map(placing.map((a) => [agentKey(a.accountId, a.agentId), a]));
  for (const o of book.openOrders()) if (o.agent && waits(o)) agents.set(agentKey(o.owner, o.agent), { accountId: o.owner, agentId: o.agent });
  ledger.release = undefined;
  if (!agents.size) return;
  const limits = await limitsOf(q, [...agents.values()]);
  ledger.release = (o, notional) => {
    const l = o.agent === undefined ? undefined : limits.get(agentKey(o.owner, o.agent));
    return l ? releaseRefusal(l, { symbol: spec.symbol, currency: spec.quote }, () => notionalToUnits(spec, notional())) : null;
  };
}
