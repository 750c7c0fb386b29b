import { z } from 'zod';

import type { trading_market } from '@svc/proto';

import { ListQuery, Nullable, prefixedId, route, Success, visibleName } from '../../route.js';
import { TradingSymbol } from '../../schemas/trading.js';
import { JournalEntry, JournalTag } from '../../schemas/trading-market.js';
import { OrderId } from './trading.js';

/** The trading journal (docs/trading.md, "Journal"): notes on trades, plans and reviews. */

const common = { tag: 'trading', auth: 'key' as const, principals: ['human', 'agent'] as Array<'human' | 'agent'>, authority: false };
const EntryId = prefixedId('jrn', 'a journal entry id');
const Title = visibleName(z.string().trim().min(1).max(200)).describe('1 to 200 characters, no control or invisible format characters.');
const Body = z.string().max(20_000).describe('The note, up to 20,000 characters.');
const Tags = z.array(JournalTag).max(20).describe('Up to 20 tags.');

const entryJson = (e: trading_market.JournalEntry) => ({
  id: e.id,
  title: e.title,
  body: e.body,
  symbol: e.symbol,
  orderId: e.orderId,
  tags: e.tags,
  createdBy: { kind: e.createdByKind, id: e.createdById },
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
});

export const tradingJournalRoutes = [
  route({
    ...common,
    id: 'trading.journal.create',
    method: 'post',
    effect: 'creates',
    path: '/trading/journal',
    summary: "Write a journal entry: a note on a trade, a plan or a review, optionally tied to a symbol and to one of the account's orders.",
    errors: ['not_found'],
    body: z
      .object({
        title: Title,
        body: Body.default(''),
        symbol: TradingSymbol.optional().describe("The symbol it is about (default: the order's)."),
        orderId: OrderId.optional().describe("One of the account's orders it is about."),
        tags: Tags.default([]),
      })
      .meta({ id: 'CreateJournalEntry' }),
    response: JournalEntry,
    status: 201,
    handler: { rpc: 'trading.createJournalEntry', request: (i) => ({ ...i.body }), response: (r) => entryJson(r.entry!) },
  }),
  route({
    ...common,
    id: 'trading.journal.list',
    method: 'get',
    path: '/trading/journal',
    summary: "The acting account's journal entries, newest first, by symbol, tag or order.",
    query: ListQuery.extend({ symbol: TradingSymbol.optional(), tag: JournalTag.optional(), orderId: OrderId.optional() }),
    response: z.object({ entries: z.array(JournalEntry), nextCursor: Nullable(z.string()) }).meta({ id: 'TradingJournalList' }),
    handler: {
      rpc: 'trading.listJournal',
      request: (i) => ({ symbol: i.query.symbol, tag: i.query.tag, orderId: i.query.orderId, limit: i.query.limit, cursor: i.query.cursor }),
      response: (r) => ({ entries: r.entries.map(entryJson), nextCursor: r.nextCursor ?? null }),
    },
  }),
  route({
    ...common,
    id: 'trading.journal.tags',
    method: 'get',
    path: '/trading/journal/tags',
    summary: "The tags of the acting account's journal, with how many entries carry each, most used first.",
    response: z
      .object({
        tags: z.array(
          z
            .object({ tag: z.string(), entries: z.number().int(), lastUsedAt: z.string().describe('The latest change of an entry with the tag.') })
            .meta({ id: 'TradingJournalTag' }),
        ),
      })
      .meta({ id: 'TradingJournalTagList' }),
    handler: { rpc: 'trading.listJournalTags', request: () => ({}) },
  }),
  route({
    ...common,
    id: 'trading.journal.get',
    method: 'get',
    path: '/trading/journal/:id',
    summary: 'One trading journal entry: its title, notes, tags and the orders it is about.',
    errors: ['not_found'],
    params: z.object({ id: EntryId }),
    response: JournalEntry,
    handler: { rpc: 'trading.getJournalEntry', request: (i) => ({ id: i.params.id }), response: (r) => entryJson(r.entry!) },
  }),
  route({
    ...common,
    id: 'trading.journal.update',
    method: 'patch',
    effect: 'updates',
    path: '/trading/journal/:id',
    summary: "Edit a journal entry's title, body or tags (tags given replace them).",
    errors: ['not_found'],
    params: z.object({ id: EntryId }),
    body: z.object({ title: Title.optional(), body: Body.optional(), tags: Tags.optional() }).meta({ id: 'UpdateJournalEntry' }),
    response: JournalEntry,
    handler: {
      rpc: 'trading.updateJournalEntry',
      request: (i) => ({ id: i.params.id, title: i.body.title, body: i.body.body, tags: i.body.tags ?? [], setTags: i.body.tags !== undefined }),
      response: (r) => entryJson(r.entry!),
    },
  }),
  route({
    ...common,
    id: 'trading.journal.delete',
    method: 'delete',
    path: '/trading/journal/:id',
    summary: 'Delete a trading journal entry; the orders it refers to are not affected.',
    errors: ['not_found'],
    params: z.object({ id: EntryId }),
    response: Success,
    handler: { rpc: 'trading.deleteJournalEntry', request: (i) => ({ id: i.params.id }), response: () => ({ success: true as const }) },
  }),
];
