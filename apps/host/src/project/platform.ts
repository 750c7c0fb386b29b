import { ControlError } from '../units/units.js';

/**
 * Calls to the platform API for the market and host tools. They go with the host credential
 * unless the owner gave the host a key of its own to act with (SVC_HOST_PLATFORM_KEY: an agent's
 * API key, under the trading limits the owner set for that agent). The gateway accepts a host
 * credential only on GET /me, GET /accounts/me/chain and GET /standing-grants/held, so without
 * such a key the market and host tools answer `principal_not_allowed`.
 */
export class PlatformClient {
  constructor(private readonly o: { baseUrl: string; credential: string; actingKey?: string; timeoutMs?: number }) {}

  get actsAs(): 'host' | 'key' {
    return this.o.actingKey ? 'key' : 'host';
  }

  /** A call with the host credential itself (GET /me, which a host may make). */
  callAsHost(method: 'GET' | 'POST', path: string): Promise<unknown> {
    return this.call(method, path, undefined, this.o.credential);
  }

  async call(method: 'GET' | 'POST', path: string, body?: unknown, key = this.o.actingKey ?? this.o.credential): Promise<unknown> {
    const url = new URL(`/v1${path}`, this.o.baseUrl);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new ControlError('platform_unreachable', `The platform (${this.o.baseUrl}) did not answer: ${(err as Error).message}`, 502);
    }
    const json = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    if (res.ok) return json;
    const code = json?.error?.code ?? 'platform_error';
    if (res.status === 401 && key === this.o.credential && code === 'invalid_api_key') {
      throw new ControlError(
        'principal_not_allowed',
        `The platform does not let a host credential call ${method} ${path} (only a person or an agent may). ` +
          "To let this host act there, its owner creates an agent key for it and sets SVC_HOST_PLATFORM_KEY (or SVC_HOST_PLATFORM_KEY_FILE); the platform's limits for that agent apply.",
        403,
      );
    }
    throw new ControlError(
      code,
      `The platform answered ${res.status} ${code}: ${json?.error?.message ?? ''}`.trim(),
      res.status >= 500 ? 502 : res.status,
    );
  }
}
