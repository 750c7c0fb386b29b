/**
 * Dynamic client registration is open to anyone (as the MCP specification expects), so each
 * address may register only so many clients in a window on this replica: a flood of registrations
 * cannot fill the accounts service's database. Passkey sign-ins (each keeps a challenge) are
 * counted the same way, in a limit of their own.
 */
export const REGISTRATIONS_PER_ADDRESS = 100;
export const REGISTRATION_WINDOW_MS = 10 * 60_000;
const MAX_ADDRESSES = 100_000;

export class RegistrationLimit {
  private readonly windows = new Map<string, { n: number; until: number }>();

  /** Counts one registration of `address`: the seconds to wait when it is over the limit, else 0. */
  take(address: string, now = Date.now()): number {
    let w = this.windows.get(address);
    if (!w || w.until <= now) {
      if (!w && this.windows.size >= MAX_ADDRESSES) this.windows.clear();
      this.windows.set(address, (w = { n: 0, until: now + REGISTRATION_WINDOW_MS }));
    }
    if (w.n >= REGISTRATIONS_PER_ADDRESS) return Math.max(1, Math.ceil((w.until - now) / 1000));
    w.n++;
    return 0;
  }
}
