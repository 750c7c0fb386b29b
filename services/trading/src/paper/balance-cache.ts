import type { BalanceRow } from '../orders/store.js';
import type { BookEntry } from './books.js';
import type { Ledger } from './ledger.js';

/**
 * The paper balances and epochs this replica last read or wrote, per account (asset → units): what
 * the optimistic group commit (venue.ts) matches against. Possibly stale (another book, another
 * replica): the statement then writes nothing or a CHECK refuses it, and the group runs on the
 * locked path, which reads them again under the book's lock.
 */
export class BalanceCache {
  private readonly accounts = new Map<string, { epoch: number; rows: Map<string, { total: bigint; held: bigint }> }>();

  /** What a locked transaction read (store.groupState): each account's epoch and balances, replacing what was cached. */
  read(epochs: Map<string, number>, balances: BalanceRow[]): void {
    for (const [accountId, epoch] of epochs) this.accounts.set(accountId, { epoch, rows: new Map() });
    for (const b of balances) this.accounts.get(b.account_id)?.rows.set(b.asset, { total: BigInt(b.total), held: BigInt(b.held) });
  }

  /** Applies committed balance changes. */
  apply(deltas: BookEntry['deltas']): void {
    for (const d of deltas ?? []) {
      const rows = this.accounts.get(d.accountId)?.rows;
      if (!rows) continue;
      const b = rows.get(d.asset) ?? { total: 0n, held: 0n };
      b.total += d.total;
      b.held += d.held;
      rows.set(d.asset, b);
    }
  }

  /** Loads the accounts' cached balances into `ledger`: their epochs, or null when one of them is not cached. */
  load(accounts: Iterable<string>, ledger: Ledger): Map<string, number> | null {
    const epochs = new Map<string, number>();
    for (const a of accounts) {
      const c = this.accounts.get(a);
      if (!c) return null;
      epochs.set(a, c.epoch);
      for (const [asset, b] of c.rows) ledger.loadUnits(a, asset, b.total, b.held);
    }
    return epochs;
  }

  /** One account's balances changed outside a book (a reset): read again on its next order. */
  forget(accountId: string): void {
    this.accounts.delete(accountId);
  }

  /** A transaction failed: nothing cached is trusted any more. */
  clear(): void {
    this.accounts.clear();
  }
}
