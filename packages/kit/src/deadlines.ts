/** The longest a Node timer waits (2^31-1 ms, 24.8 days): Node fires a longer one at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `expire` once `deadline` (epoch milliseconds) has passed, however far away it is: a
 * deadline farther than one timer can wait is waited for in steps. Returns what cancels it.
 *
 * `expire` runs one turn of the event loop after the timer, once the sockets' pending reads have
 * been handled: a process that was stalled past the deadline (a long GC pause, a starved CPU)
 * fires its timers before it reads its sockets, and would otherwise fail calls whose answers
 * were already waiting to be read.
 */
export function atDeadline(deadline: number, expire: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let pending: NodeJS.Immediate | undefined;
  const arm = () => {
    const left = deadline - Date.now();
    timer =
      left > MAX_TIMER_MS
        ? setTimeout(arm, MAX_TIMER_MS)
        : setTimeout(
            () => {
              pending = setImmediate(expire);
            },
            Math.max(0, left),
          );
  };
  arm();
  return () => {
    clearTimeout(timer);
    if (pending) clearImmediate(pending);
  };
}

/**
 * A deadline as gRPC's `grpc-timeout` header, which allows at most 8 digits: milliseconds up to ~27
 * hours, seconds beyond. A server is told at most 24.8 days (grpc-js times its end of the call
 * with one timer, which would fire at once past that); the caller keeps the whole deadline.
 */
export function grpcTimeout(ms: number): string {
  const n = Math.max(1, Math.ceil(Math.min(ms, MAX_TIMER_MS)));
  // Whole seconds down, so that 24.8 days stays within what the server's timer can wait.
  return n <= 99_999_999 ? `${n}m` : `${Math.floor(n / 1000)}S`;
}
