/**
 * The sandbox's waiting calls, in turns between tenants (accounts) rather than in arrival order:
 * a tenant that queued thirty calls does not make another's one call wait behind all thirty.
 *
 * The next call goes to the tenant with the fewest runs in progress; between tenants running as
 * many, to the one whose last run started longest ago. Within a tenant, calls keep their order.
 * So with P processes and N tenants waiting, no tenant holds more than ceil(P / N) of them for
 * longer than its runs already started take (a run is never stopped to make room); the pool's
 * `tenantShare` also caps what one tenant holds when nobody else waits.
 */
export class FairQueue<T> {
  /** Tenant → its waiting calls, oldest first (in the order tenants began to wait). */
  private readonly tenants = new Map<string, T[]>();
  /** Tenant → the number of its last turn (absent: none since it last had nothing to do). */
  private readonly turns = new Map<string, number>();
  private turn = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(tenant: string, item: T): void {
    const q = this.tenants.get(tenant);
    if (q) q.push(item);
    else this.tenants.set(tenant, [item]);
    this.count++;
  }

  /** Takes a waiting call out (it gave up); false when it was not waiting. */
  remove(tenant: string, item: T): boolean {
    const q = this.tenants.get(tenant);
    const i = q ? q.indexOf(item) : -1;
    if (!q || i < 0) return false;
    q.splice(i, 1);
    if (!q.length) this.tenants.delete(tenant);
    this.count--;
    return true;
  }

  /** A run of `tenant` started (from the queue or straight away): its turn was now. */
  served(tenant: string): void {
    this.turns.set(tenant, ++this.turn);
  }

  /** `tenant` has nothing running: unless it waits, its last turn is forgotten (the map stays small). */
  idle(tenant: string): void {
    if (!this.tenants.has(tenant)) this.turns.delete(tenant);
  }

  /**
   * The next call to run, given how many runs each tenant has in progress: the tenant with the
   * fewest, and between those the one whose last turn is oldest (never: first), then the one
   * that began to wait first. A tenant with `share` runs in progress already is passed over
   * (undefined when every waiting tenant is).
   */
  shift(running: (tenant: string) => number, share = Infinity): T | undefined {
    let best: string | undefined;
    let fewest = Infinity;
    let oldest = Infinity;
    for (const tenant of this.tenants.keys()) {
      const n = running(tenant);
      if (n >= share) continue;
      const last = this.turns.get(tenant) ?? 0;
      if (n < fewest || (n === fewest && last < oldest)) [best, fewest, oldest] = [tenant, n, last];
    }
    if (best === undefined) return undefined;
    const q = this.tenants.get(best)!;
    const item = q.shift()!;
    if (!q.length) this.tenants.delete(best);
    this.count--;
    return item;
  }

  /** Every waiting call, taken out (the pool closes). */
  drain(): T[] {
    const all = [...this.tenants.values()].flat();
    this.tenants.clear();
    this.turns.clear();
    this.count = 0;
    return all;
  }
}
