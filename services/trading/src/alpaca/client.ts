import { DomainError } from '@svc/kit';

/**
 * Alpaca's Trading API (v2), over fetch: the documented REST paths, JSON bodies and the
 * `APCA-API-KEY-ID` / `APCA-API-SECRET-KEY` headers. Only what the venue adapter uses. Errors come
 * back as `{code, message}` with an HTTP status; they are mapped to the platform's errors here.
 */

export interface AlpacaCredentials {
  keyId: string;
  secretKey: string;
}

export interface AlpacaOrder {
  id: string;
  client_order_id: string;
  created_at: string;
  updated_at: string | null;
  symbol: string;
  /** Null for a notional order until it filled. */
  qty: string | null;
  notional?: string | null;
  filled_qty: string;
  filled_avg_price: string | null;
  type: string;
  side: string;
  time_in_force: string;
  limit_price: string | null;
  stop_price: string | null;
  status: string;
}

export interface AlpacaAccount {
  currency: string;
  cash: string;
  equity: string;
  buying_power: string;
}

export interface AlpacaPosition {
  symbol: string;
  qty: string;
  current_price: string | null;
  market_value: string | null;
}

export interface AlpacaOrderRequest {
  symbol: string;
  /** Exactly one of qty and notional (a dollar amount: Alpaca's fractional market orders). */
  qty?: string;
  notional?: string;
  side: string;
  type: string;
  time_in_force: string;
  limit_price?: string;
  stop_price?: string;
  client_order_id: string;
}

/** A request's signal: its timeout, and for a read the signal of the gRPC call it serves (CallContext.signal). */
function requestSignal(timeoutMs: number, caller: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return caller ? AbortSignal.any([timeout, caller]) : timeout;
}

export class AlpacaClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs = 10_000,
  ) {}

  /** `caller`: a read's caller's signal (only reads take one). */
  private async call<T>(creds: AlpacaCredentials, method: string, path: string, body?: unknown, caller?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: {
          'APCA-API-KEY-ID': creds.keyId,
          'APCA-API-SECRET-KEY': creds.secretKey,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        // A read stops when its caller gives up (a run's tool call aborted, docs/threads.md); an order or
        // a cancel is never cut off mid-flight (what the venue did would be unknown).
        signal: requestSignal(this.timeoutMs, caller),
      });
    } catch (err) {
      throw new DomainError('unavailable', 'venue_unavailable', 'The venue (Alpaca) could not be reached; try again shortly.', undefined, {
        cause: err,
      });
    }
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    if (res.ok) return parsed as T;
    throw alpacaError(res.status, parsed as { code?: number; message?: string } | null, res.headers.get('retry-after'));
  }

  placeOrder(creds: AlpacaCredentials, order: AlpacaOrderRequest): Promise<AlpacaOrder> {
    return this.call(creds, 'POST', '/v2/orders', order);
  }

  getOrder(creds: AlpacaCredentials, id: string, signal?: AbortSignal): Promise<AlpacaOrder> {
    return this.call(creds, 'GET', `/v2/orders/${encodeURIComponent(id)}`, undefined, signal);
  }

  orderByClientId(creds: AlpacaCredentials, clientOrderId: string): Promise<AlpacaOrder> {
    return this.call(creds, 'GET', `/v2/orders:by_client_order_id?client_order_id=${encodeURIComponent(clientOrderId)}`);
  }

  async cancelOrder(creds: AlpacaCredentials, id: string): Promise<void> {
    await this.call(creds, 'DELETE', `/v2/orders/${encodeURIComponent(id)}`);
  }

  account(creds: AlpacaCredentials, signal?: AbortSignal): Promise<AlpacaAccount> {
    return this.call(creds, 'GET', '/v2/account', undefined, signal);
  }

  positions(creds: AlpacaCredentials, signal?: AbortSignal): Promise<AlpacaPosition[]> {
    return this.call(creds, 'GET', '/v2/positions', undefined, signal);
  }

  openOrders(creds: AlpacaCredentials, signal?: AbortSignal): Promise<AlpacaOrder[]> {
    return this.call(creds, 'GET', '/v2/orders?status=open&limit=500', undefined, signal);
  }
}

/** Alpaca's answer as the platform's error; the venue's own message is kept (it is about the caller's order). */
export function alpacaError(status: number, body: { code?: number; message?: string } | null, retryAfter: string | null): DomainError {
  const said = typeof body?.message === 'string' ? body.message.slice(0, 300) : `HTTP ${status}`;
  if (status === 401 || (status === 403 && /not authorized|unauthorized|forbidden/i.test(said)))
    return new DomainError('unprocessable', 'venue_credentials_rejected', `Alpaca refused the stored credentials: ${said}`);
  if (status === 403) return new DomainError('unprocessable', 'insufficient_balance', `Rejected by Alpaca: ${said}`);
  if (status === 404) return new DomainError('not_found', 'not_found', 'The order was not found at the venue.');
  if (status === 422 || status === 400) return new DomainError('unprocessable', 'venue_rejected', `Rejected by Alpaca: ${said}`);
  if (status === 429)
    return new DomainError('rate_limited', 'venue_rate_limited', 'Alpaca is rate limiting these credentials; try again shortly.', {
      retryAfterSeconds: Number(retryAfter) || 1,
    });
  return new DomainError('unavailable', 'venue_unavailable', `Alpaca answered ${status}; try again shortly.`);
}
