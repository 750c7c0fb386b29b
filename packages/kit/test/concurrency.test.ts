import { AccountLimiter, DomainError, eachAtMost } from '@svc/kit';

// Per-account (and per-agent) caps on heavy work: one more is refused at once with a 429 that
// names the limit; a slot given back is free again; other accounts are untouched.

const refusal = (fn: () => unknown): DomainError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('AccountLimiter', () => {
  const limit = () => new AccountLimiter({ name: 'drive_scans', what: 'drive scans', perAccount: 2 });

  it("refuses an account's operation past its cap, with Retry-After and the limit named, and leaves other accounts alone", () => {
    const l = limit();
    const a = { kind: 'human', accountId: 'acct_a' };
    const r1 = l.acquire(a);
    l.acquire(a);
    const e = refusal(() => l.acquire(a));
    expect([e.kind, e.httpStatus, e.code]).toEqual(['rate_limited', 429, 'concurrency_limit']);
    expect(e.details).toEqual({ retryAfterSeconds: 1, limit: 'drive_scans', scope: 'account', max: 2 });
    expect(e.message).toMatch(/drive scans.*may have 2 in progress \(limit drive_scans\)/);
    // Another account has its own share.
    l.acquire({ kind: 'human', accountId: 'acct_b' });
    // A slot given back (twice counts once) is free again.
    r1();
    r1();
    expect(l.held('acct_a')).toBe(1);
    l.acquire(a);
    expect(() => l.acquire(a)).toThrow(DomainError);
  });

  it('counts an agent under its account and on its own (half the account, rounded up)', () => {
    const l = new AccountLimiter({ name: 'git_builds', what: 'Git builds', perAccount: 3 });
    expect(l.perAgent).toBe(2);
    const agent = { kind: 'agent', accountId: 'acct_a', agentId: 'agt_1' };
    l.acquire(agent);
    l.acquire(agent);
    expect(refusal(() => l.acquire(agent)).details).toMatchObject({ scope: 'agent', max: 2 });
    // The account's third slot is still there for its owner or another agent, then the account is full.
    l.acquire({ kind: 'agent', accountId: 'acct_a', agentId: 'agt_2' });
    expect(refusal(() => l.acquire({ kind: 'human', accountId: 'acct_a' })).details).toMatchObject({ scope: 'account', max: 3 });
  });

  it('gives the slot back when the work fails, and does not count the platform itself', async () => {
    const l = new AccountLimiter({ name: 'profile_merges', what: 'merges', perAccount: 1 });
    await expect(l.run({ accountId: 'acct_a' }, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(l.held('acct_a')).toBe(0);
    await expect(l.run({ accountId: 'acct_a' }, async () => 'ok')).resolves.toBe('ok');
    const system = { kind: 'system', accountId: 'acct_a' };
    l.acquire({ accountId: 'acct_a' });
    expect(() => l.acquire(system)).not.toThrow();
  });
});

describe('eachAtMost', () => {
  const tick = () => new Promise((r) => setTimeout(r, 1));

  it('runs every item, never more than the bound at once, and answers how many were done', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    const done = await eachAtMost(3, [1, 2, 3, 4, 5, 6, 7], async (n) => {
      most = Math.max(most, ++running);
      await tick();
      seen.push(n);
      running--;
    });
    expect(done).toBe(7);
    expect(most).toBe(3);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await eachAtMost(4, [], async () => {})).toBe(0);
  });

  it('stops starting items at the first failure, lets the running ones end, then throws it', async () => {
    const started: number[] = [];
    let ended = 0;
    const failure = new Error('item 2');
    await expect(
      eachAtMost(2, [1, 2, 3, 4, 5, 6], async (n) => {
        started.push(n);
        if (n === 2) throw failure;
        await tick();
        ended++;
      }),
    ).rejects.toBe(failure);
    // 1 and 2 started together; 2 failed, so only the lane already past it could take one more.
    expect(started.length).toBeLessThanOrEqual(3);
    expect(ended).toBe(started.length - 1);
  });
});
