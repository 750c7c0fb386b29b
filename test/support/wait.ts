/**
 * Polls `probe` until it answers a truthy value and returns that value; throws when `ms` pass
 * first, naming `what` (the condition the test waited for). With `retryErrors`, a probe that
 * throws counts as "not yet" (a process still starting refuses connections) and the last error is
 * named in the timeout's message; otherwise its error ends the wait.
 */
export async function until<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  ms = 15_000,
  { every = 50, what = 'condition', retryErrors = false }: { every?: number; what?: string; retryErrors?: boolean } = {},
): Promise<T> {
  const end = Date.now() + ms;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      if (!retryErrors) throw err;
      lastErr = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (${ms} ms)${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}
