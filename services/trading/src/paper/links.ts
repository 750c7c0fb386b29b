import { newId } from '@svc/kit';

import { type BookOrder, type MatchResult, newBookOrder } from '../engine/book.js';
import type { PlaceInput } from './place-input.js';

/** Linked orders on the paper venue (docs/trading.md, "Linked orders"): their legs as the engine takes them. */

/** Adds one cancel's (or submission's) changes to another's. */
export function merge(into: MatchResult, r: MatchResult): void {
  into.fills.push(...r.fills);
  into.changed.push(...r.changed);
  if (r.activated) (into.activated ??= []).push(...r.activated);
}

/**
 * The legs of a linked order (docs/trading.md, "Linked orders"), linked to it: a bracket's or an
 * OTO's exits (the other side, held until the entry closes having filled; a bracket's two are an
 * OCO), or an OCO's stop leg (the same side; this order is its take-profit leg).
 */
export function linkLegs(o: BookOrder, input: PlaceInput): BookOrder[] {
  const legs = (input.legs ?? []).map((l) =>
    newBookOrder({
      id: newId('ord'),
      owner: o.owner,
      agent: o.agent,
      side: input.orderClass === 'oco' ? o.side : o.side === 'buy' ? 'sell' : 'buy',
      type: l.type,
      tif: o.tif,
      qty: o.qty,
      price: l.price,
      stopPrice: l.stopPrice,
      trailTicks: l.trailTicks,
      trailBps: l.trailBps,
    }),
  );
  if (input.orderClass === 'oco') {
    o.sibling = legs[0];
    legs[0]!.sibling = o;
    return legs;
  }
  for (const l of legs) l.status = 'held';
  if (legs.length) o.legs = legs;
  if (legs.length === 2) {
    legs[0]!.sibling = legs[1];
    legs[1]!.sibling = legs[0];
  }
  return legs;
}
