import { type Actor, actorOf, DomainError, enqueueEvent, type Principal, type Queryable, requireAuthority, type Sql } from '@svc/kit';

import { SCHEMA } from './store.js';
import { formatUnits, parseUnits, scaled } from './symbols.js';

/**
 * Agents' trading limits (docs/trading.md): set by a person for one agent in the acting account;
 * an agent's order outside them answers 403 `trading_limit_exceeded` naming the limit. An agent
 * without limits set trades on paper venues only, without caps.
 */

export interface LimitsRow {
  account_id: string;
  agent_id: string;
  max_notional_per_order: string | null;
  max_notional_per_day: string | null;
  symbols: string[] | null;
  paper_only: boolean;
  set_by: Actor | null;
  updated_at: Date | null;
  used_today: string;
}

export interface LimitsInput {
  agentId: string;
  maxNotionalPerOrder?: string;
  maxNotionalPerDay?: string;
  /** Null: every symbol. */
  symbols: string[] | null;
  paperOnly: boolean;
}

const exceeded = (limit: string, message: string) =>
  new DomainError('forbidden', 'trading_limit_exceeded', `Trading limit ${limit} exceeded: ${message}`);

const today = () => new Date().toISOString().slice(0, 10);

const COLUMNS = `l.account_id, l.agent_id, l.max_notional_per_order::text, l.max_notional_per_day::text, l.symbols, l.paper_only, l.set_by, l.updated_at`;

export class AgentLimits {
  constructor(
    private readonly deps: {
      sql: Sql;
      /** Whether the agent is one the principal can see (the agents service answers NOT_FOUND otherwise). */
      agentVisible(principalToken: string, agentId: string): Promise<void>;
      kick(): void;
    },
  ) {}

  private async row(q: Queryable, accountId: string, agentId: string): Promise<LimitsRow> {
    const rows = await q.query<LimitsRow>(
      `SELECT ${COLUMNS}, coalesce((SELECT u.notional::text FROM trading.agent_usage u WHERE u.account_id = l.account_id AND u.agent_id = l.agent_id
         AND u.day = $3::date), '0') AS used_today FROM trading.agent_limits l WHERE l.account_id = $1 AND l.agent_id = $2`,
      [accountId, agentId, today()],
    );
    return rows[0] ? norm(rows[0]) : defaults(accountId, agentId);
  }

  /** The account's limits (an agent's own); `q` inside a transaction. */
  async list(p: Principal, q: Queryable = this.deps.sql): Promise<LimitsRow[]> {
    const rows = await q.query<LimitsRow>(
      `SELECT ${COLUMNS}, coalesce(u.notional::text, '0') AS used_today FROM trading.agent_limits l
       LEFT JOIN trading.agent_usage u ON u.account_id = l.account_id AND u.agent_id = l.agent_id AND u.day = $2::date
       WHERE l.account_id = $1 ORDER BY l.agent_id`,
      [p.accountId, today()],
    );
    const out = rows.map(norm);
    // An agent sees its own limits, the defaults when none are set.
    if (p.kind === 'agent' && p.agentId) return [out.find((r) => r.agent_id === p.agentId) ?? (await this.row(q, p.accountId, p.agentId))];
    return out;
  }

  /** Sets an agent's limits: a person, through the API; the agent must be one the person can see. */
  async set(p: Principal, principalToken: string, input: LimitsInput): Promise<LimitsRow> {
    requireAuthority(p, 'Trading limits are set');
    await this.deps.agentVisible(principalToken, input.agentId);
    for (const [field, v] of [
      ['maxNotionalPerOrder', input.maxNotionalPerOrder],
      ['maxNotionalPerDay', input.maxNotionalPerDay],
    ] as const) {
      if (v !== undefined && scaled(v, 9) === null)
        throw new DomainError('invalid_argument', 'invalid_request', `${field}: must be a non-negative decimal with at most 9 decimals.`);
    }
    const actor = actorOf(p);
    const row = await this.deps.sql.tx(async (q) => {
      await q.query(
        `INSERT INTO trading.agent_limits AS l (account_id, agent_id, max_notional_per_order, max_notional_per_day, symbols, paper_only, set_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
         ON CONFLICT (account_id, agent_id) DO UPDATE SET max_notional_per_order = EXCLUDED.max_notional_per_order,
           max_notional_per_day = EXCLUDED.max_notional_per_day, symbols = EXCLUDED.symbols, paper_only = EXCLUDED.paper_only,
           set_by = EXCLUDED.set_by, updated_at = now()`,
        [
          p.accountId,
          input.agentId,
          input.maxNotionalPerOrder ?? null,
          input.maxNotionalPerDay ?? null,
          input.symbols,
          input.paperOnly,
          JSON.stringify(actor),
        ],
      );
      const saved = await this.row(q, p.accountId, input.agentId);
      await enqueueEvent(q, SCHEMA, {
        subject: 'trading.limits.set',
        accountId: p.accountId,
        data: {
          agentId: input.agentId,
          maxNotionalPerOrder: saved.max_notional_per_order,
          maxNotionalPerDay: saved.max_notional_per_day,
          symbols: saved.symbols,
          paperOnly: saved.paper_only,
          actor,
        },
      });
      return saved;
    });
    this.deps.kick();
    return row;
  }

  /**
   * Checks an agent's order against its limits (people are not limited) and counts its notional
   * into the day's usage, in the caller's transaction: refused, nothing is counted.
   */
  async check(
    q: Queryable,
    p: Principal,
    order: { venueMode: 'paper' | 'live'; symbol: string; notionalUnits: bigint; currency: string; leg?: string },
  ): Promise<void> {
    if (p.kind !== 'agent' || !p.agentId) return;
    // A linked order's leg (docs/trading.md, "Linked orders"): checked against the per-order cap, counted with its entry.
    if (order.leg) {
      const l = await this.row(q, p.accountId, p.agentId);
      if (l.max_notional_per_order !== null && order.notionalUnits > parseUnits(l.max_notional_per_order))
        throw exceeded(
          'maxNotionalPerOrder',
          `the ${order.leg} leg's notional ${formatUnits(order.notionalUnits)} ${order.currency} is over ${l.max_notional_per_order} ${order.currency}.`,
        );
      return;
    }
    const l = await this.row(q, p.accountId, p.agentId);
    const refused = perOrder(l, order, () => order.notionalUnits);
    if (refused) throw exceeded(refused.limit, refused.message);
    const notional = formatUnits(order.notionalUnits);
    const used = await q.query<{ notional: string }>(
      `INSERT INTO trading.agent_usage AS u (account_id, agent_id, day, notional) VALUES ($1, $2, $3::date, $4)
       ON CONFLICT (account_id, agent_id, day) DO UPDATE SET notional = u.notional + EXCLUDED.notional RETURNING notional::text`,
      [p.accountId, p.agentId, today(), notional],
    );
    if (l.max_notional_per_day !== null && parseUnits(plain(used[0]!.notional)) > parseUnits(l.max_notional_per_day))
      throw exceeded(
        'maxNotionalPerDay',
        `with this order the agent's notional today would be ${plain(used[0]!.notional)} ${order.currency}, over ${l.max_notional_per_day} ${order.currency}.`,
      );
  }
}

/** What an order breaks of the limits that bound each order (paperOnly, symbols, maxNotionalPerOrder), or null. */
function perOrder(
  l: LimitsRow,
  order: { venueMode: 'paper' | 'live'; symbol: string; currency: string },
  notionalUnits: () => bigint,
): { limit: string; message: string } | null {
  if (l.paper_only && order.venueMode !== 'paper') return { limit: 'paperOnly', message: 'this agent may trade on paper venues only.' };
  if (l.symbols && !l.symbols.includes(order.symbol))
    return { limit: 'symbols', message: `this agent may trade ${l.symbols.length ? l.symbols.join(', ') : 'no symbol'}, not ${order.symbol}.` };
  if (l.max_notional_per_order === null) return null;
  const units = notionalUnits();
  if (units <= parseUnits(l.max_notional_per_order)) return null;
  return {
    limit: 'maxNotionalPerOrder',
    message: `the order's notional ${formatUnits(units)} ${order.currency} is over ${l.max_notional_per_order} ${order.currency}.`,
  };
}

/**
 * The limits of these agents (account and agent id) with their usage today, in one read: what an
 * agent's orders that waited are checked against when they go on (paper/venue.ts). An agent
 * without limits set has the defaults.
 */
export async function limitsOf(q: Queryable, agents: Array<{ accountId: string; agentId: string }>): Promise<Map<string, LimitsRow>> {
  const out = new Map<string, LimitsRow>();
  if (!agents.length) return out;
  const rows = await q.query<LimitsRow>(
    `SELECT ${COLUMNS}, coalesce(u.notional::text, '0') AS used_today FROM trading.agent_limits l
     LEFT JOIN trading.agent_usage u ON u.account_id = l.account_id AND u.agent_id = l.agent_id AND u.day = $3::date
     WHERE (l.account_id, l.agent_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [agents.map((a) => a.accountId), agents.map((a) => a.agentId), today()],
  );
  for (const r of rows) out.set(agentKey(r.account_id, r.agent_id), norm(r));
  for (const a of agents) if (!out.has(agentKey(a.accountId, a.agentId))) out.set(agentKey(a.accountId, a.agentId), defaults(a.accountId, a.agentId));
  return out;
}

export const agentKey = (accountId: string, agentId: string) => `${accountId}\u0000${agentId}`;

/**
 * Why an agent's order that waited (a leg going live, a stop that triggered, an order at its
 * auction) may not go on now (docs/trading.md, "Agents' limits"): the limits that bound each order,
 * at what the order stands for now, and a day's usage that is over the day's cap (it was counted
 * when the order was placed, not again). The reason recorded on the order, `trading_limit_exceeded:<limit>`; null when it may.
 */
export function releaseRefusal(l: LimitsRow, order: { symbol: string; currency: string }, notionalUnits: () => bigint): string | null {
  const refused = perOrder(l, { ...order, venueMode: 'paper' }, notionalUnits);
  if (refused) return `trading_limit_exceeded:${refused.limit}`;
  if (l.max_notional_per_day !== null && parseUnits(l.used_today) > parseUnits(l.max_notional_per_day))
    return 'trading_limit_exceeded:maxNotionalPerDay';
  return null;
}

/** numeric's text without trailing zeros ("12.500000000" → "12.5"). */
export const plain = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);

function norm(r: LimitsRow): LimitsRow {
  return {
    ...r,
    max_notional_per_order: r.max_notional_per_order === null ? null : plain(r.max_notional_per_order),
    max_notional_per_day: r.max_notional_per_day === null ? null : plain(r.max_notional_per_day),
    used_today: plain(r.used_today),
    set_by: typeof r.set_by === 'string' ? JSON.parse(r.set_by) : r.set_by,
  };
}

function defaults(accountId: string, agentId: string): LimitsRow {
  return {
    account_id: accountId,
    agent_id: agentId,
    max_notional_per_order: null,
    max_notional_per_day: null,
    symbols: null,
    paper_only: true,
    set_by: null,
    updated_at: null,
    used_today: '0',
  };
}
