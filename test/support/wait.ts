/**
 * Polls `probe` until it answers a truthy value and returns that value; throws when `ms` pass
 * first, naming `what` (the condition the test waited for).
 */
export async function until<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  ms = 15_000,
  { every = 50, what = 'condition' }: { every?: number; what?: string } = {},
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} not met in time (${ms} ms)`);
    await new Promise((r) => setTimeout(r, every));
  }
}
