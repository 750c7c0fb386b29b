import { actorOf, DomainError, enqueueEvent, invalid, newId, type Principal, requireAuthority, type Sql } from '@svc/kit';

import { fromUnits, SCALE, toUnits } from '../inference/cost.js';
import type { Charging } from '../inference/infer.js';
import { SCHEMA } from '../models/store.js';
import { type CreditEntryRow, CreditStore } from './store.js';

/**
 * Credits (docs/models.md, "Credits"): each account's balance, kept as a ledger in PostgreSQL. The
 * operator grants credits; each model call on a priced model that the platform's key served
 * debits its cost at the catalogue's prices, once per charge key (a retried step is not charged
 * twice); a call served by the account's own provider key costs none. A priced call starts only
 * while the balance is above 0 (`insufficient_credits` otherwise); the call that crosses 0 is
 * still charged in full, so a balance may end a little below 0.
 */

export const CURRENCY = 'USD';
/** The largest grant at once. */
const GRANT_MAX = toUnits('1000000');

export interface CreditsDeps {
  sql: Sql;
  /** Whether a person is the platform operator (the accounts service's GetMe). */
  isOperator(principalToken: string): Promise<boolean>;
  kick(): void;
  /** Told the balance after each charge (low-balance alerts). */
  afterCharge?: (accountId: string, balance: string) => Promise<void>;
}

/** A ledger amount as the API shows it: exact, without trailing zeros. */
export const decimal = (numeric: string): string => fromUnits(toUnits(numeric));

export interface CreditsView {
  balance: string;
  currency: string;
  entries: CreditEntryRow[];
  nextCursor?: string;
}

const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
function decodeCursor(c: string): string {
  const id = Buffer.from(c, 'base64url').toString('utf8');
  if (!/^crd_[0-9a-z]{26}$/.test(id)) throw invalid('cursor: is not a cursor this list gave.', 'invalid_cursor');
  return id;
}

export class Credits implements Charging {
  readonly store: CreditStore;

  constructor(private readonly deps: CreditsDeps) {
    this.store = new CreditStore(deps.sql);
  }

  /** The acting account's balance and entries, newest first. */
  async view(p: Principal, page: { limit?: number; cursor?: string }): Promise<CreditsView> {
    const limit = Math.min(Math.max(page.limit || 50, 1), 200);
    const before = page.cursor ? decodeCursor(page.cursor) : null;
    const [balance, rows] = await Promise.all([this.store.balance(p.accountId), this.store.entries(p.accountId, before, limit)]);
    const entries = rows.slice(0, limit);
    return {
      balance: decimal(balance),
      currency: CURRENCY,
      entries,
      nextCursor: rows.length > limit ? encodeCursor(entries[entries.length - 1]!.id) : undefined,
    };
  }

  /** The operator adds credits to an account. */
  async grant(
    p: Principal,
    principalToken: string,
    input: { accountId: string; amount: string; memo?: string },
  ): Promise<{ entry: CreditEntryRow; balance: string }> {
    requireAuthority(p, 'Credits are granted');
    if (p.kind !== 'system' && !(await this.deps.isOperator(principalToken))) {
      throw new DomainError('forbidden', 'operator_required', 'Only the platform operator grants credits.');
    }
    if (!/^acct_[0-9a-z]{26}$/.test(input.accountId)) throw invalid('accountId: must be an account id (acct_…).');
    if (!new RegExp(`^\\d{1,7}(\\.\\d{1,${SCALE}})?$`).test(input.amount)) {
      throw invalid(`amount: must be a decimal number above 0 with at most ${SCALE} decimal places, as a string ("10", "2.5").`);
    }
    const units = toUnits(input.amount);
    if (units <= 0n || units > GRANT_MAX) throw invalid(`amount: must be above 0 and at most ${fromUnits(GRANT_MAX)}.`);
    const memo = input.memo?.trim() || null;
    if (memo && memo.length > 200) throw invalid('memo: must be at most 200 characters.');
    const added = await this.store.add(
      {
        id: newId('crd'),
        account_id: input.accountId,
        kind: 'grant',
        amount: fromUnits(units),
        currency: CURRENCY,
        model: null,
        input_tokens: 0,
        output_tokens: 0,
        charge_key: null,
        memo,
        actor: actorOf(p),
      },
      (q, entry) =>
        enqueueEvent(q, SCHEMA, {
          subject: 'models.credits.granted',
          accountId: input.accountId,
          data: { entryId: entry.id, amount: decimal(entry.amount), currency: CURRENCY, memo, actor: entry.actor },
        }),
    );
    const { entry, balance } = added!;
    this.deps.kick();
    return { entry, balance: decimal(balance) };
  }

  /** A priced call may start: the step was already charged (a retry), or the balance is above 0. */
  async ensure(accountId: string, chargeKey: string): Promise<void> {
    if (await this.store.charged(accountId, chargeKey)) return;
    const balance = toUnits(await this.store.balance(accountId));
    if (balance <= 0n) {
      throw new DomainError('forbidden', 'insufficient_credits', `The account has no credits left (balance ${fromUnits(balance)} ${CURRENCY}).`, {
        balance: fromUnits(balance),
        currency: CURRENCY,
      });
    }
  }

  /** Debits a call's cost once per (account, charge key). */
  async debit(
    accountId: string,
    chargeKey: string,
    cost: string,
    memo: { model: string; inputTokens: number; outputTokens: number; actor: ReturnType<typeof actorOf> },
  ): Promise<void> {
    const added = await this.store.add({
      id: newId('crd'),
      account_id: accountId,
      kind: 'charge',
      amount: fromUnits(-toUnits(cost)),
      currency: CURRENCY,
      model: memo.model,
      input_tokens: memo.inputTokens,
      output_tokens: memo.outputTokens,
      charge_key: chargeKey,
      memo: null,
      actor: memo.actor,
    });
    // A failed check does not fail the call that was charged; the next charge or read checks again.
    if (added && this.deps.afterCharge) await this.deps.afterCharge(accountId, added.balance).catch(() => undefined);
  }
}
