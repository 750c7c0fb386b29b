import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for Alpaca's Trading API v2 on a loopback port, speaking its wire protocol: the same
 * paths (/v2/orders, /v2/orders/{id}, /v2/orders:by_client_order_id, /v2/account, /v2/positions),
 * the APCA-API-KEY-ID / APCA-API-SECRET-KEY headers, Alpaca's order JSON (strings for decimals)
 * and its errors (`{"code": 40010001, "message": "…"}` with 401/403/404/422). Market orders fill
 * at once at `price`; limit and stop orders stay `accepted` until cancelled.
 */
export interface FakeAlpaca {
  url: string;
  requests: Array<{ method: string; path: string; keyId: string | undefined; body: any }>;
  orders: Map<string, any>;
  close(): Promise<void>;
}

export async function startFakeAlpaca(opts: { keyId: string; secretKey: string; cash: number; price: number }): Promise<FakeAlpaca> {
  const orders = new Map<string, any>();
  const requests: FakeAlpaca['requests'] = [];
  let cash = opts.cash;
  const positions = new Map<string, number>();

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const url = new URL(req.url!, 'http://x');
      const body = raw ? JSON.parse(raw) : null;
      const keyId = req.headers['apca-api-key-id'] as string | undefined;
      requests.push({ method: req.method!, path: url.pathname + url.search, keyId, body });
      const send = (status: number, json?: unknown) => {
        res.writeHead(status, json === undefined ? {} : { 'content-type': 'application/json' });
        res.end(json === undefined ? undefined : JSON.stringify(json));
      };
      const fail = (status: number, code: number, message: string) => send(status, { code, message });
      if (keyId !== opts.keyId || req.headers['apca-api-secret-key'] !== opts.secretKey) return fail(401, 40110000, 'request is not authorized');

      if (req.method === 'POST' && url.pathname === '/v2/orders') {
        // Alpaca's fractional orders: a dollar amount (notional) instead of qty, market orders only, qty found at the fill.
        if (body.qty !== undefined && body.notional !== undefined) return fail(422, 40010001, 'qty and notional cannot both be set');
        if (body.notional !== undefined && body.type !== 'market') return fail(422, 40010001, 'notional orders must be market orders');
        const qty = body.notional !== undefined ? Math.floor((Number(body.notional) / opts.price) * 1e9) / 1e9 : Number(body.qty);
        if (!(qty > 0)) return fail(422, 40010001, 'qty must be > 0');
        if (!['market', 'limit', 'stop', 'stop_limit'].includes(body.type)) return fail(422, 40010001, 'invalid order type');
        if ((body.type === 'limit' || body.type === 'stop_limit') && !body.limit_price) return fail(422, 40010001, 'limit_price is required');
        if ([...orders.values()].some((o) => o.client_order_id === body.client_order_id))
          return fail(422, 40010001, 'client_order_id must be unique');
        const price = body.limit_price ? Number(body.limit_price) : opts.price;
        if (body.side === 'buy' && qty * price > cash) return fail(403, 40310000, 'insufficient buying power');
        const now = new Date().toISOString();
        const order: any = {
          id: randomUUID(),
          client_order_id: body.client_order_id,
          created_at: now,
          updated_at: now,
          submitted_at: now,
          filled_at: null,
          symbol: body.symbol,
          asset_class: 'us_equity',
          qty: body.notional !== undefined ? null : body.qty,
          notional: body.notional ?? null,
          filled_qty: '0',
          filled_avg_price: null,
          order_class: '',
          order_type: body.type,
          type: body.type,
          side: body.side,
          time_in_force: body.time_in_force,
          limit_price: body.limit_price ?? null,
          stop_price: body.stop_price ?? null,
          status: 'accepted',
          extended_hours: false,
        };
        if (body.type === 'market') {
          order.status = 'filled';
          order.filled_qty = String(qty);
          if (body.notional !== undefined) order.qty = String(qty);
          order.filled_avg_price = String(opts.price);
          order.filled_at = now;
          cash += (body.side === 'buy' ? -1 : 1) * qty * opts.price;
          positions.set(body.symbol, (positions.get(body.symbol) ?? 0) + (body.side === 'buy' ? qty : -qty));
        }
        orders.set(order.id, order);
        return send(200, order);
      }
      if (req.method === 'GET' && url.pathname === '/v2/orders:by_client_order_id') {
        const o = [...orders.values()].find((x) => x.client_order_id === url.searchParams.get('client_order_id'));
        return o ? send(200, o) : fail(404, 40410000, 'order not found');
      }
      if (req.method === 'GET' && url.pathname === '/v2/orders') {
        return send(
          200,
          [...orders.values()].filter((o) => url.searchParams.get('status') !== 'open' || ['accepted', 'new', 'partially_filled'].includes(o.status)),
        );
      }
      const one = /^\/v2\/orders\/([^/]+)$/.exec(url.pathname);
      if (one) {
        const o = orders.get(decodeURIComponent(one[1]!));
        if (!o) return fail(404, 40410000, 'order not found');
        if (req.method === 'GET') return send(200, o);
        if (req.method === 'DELETE') {
          if (!['accepted', 'new', 'partially_filled'].includes(o.status)) return fail(422, 42210000, `order is already in "${o.status}" state`);
          o.status = 'canceled';
          o.updated_at = new Date().toISOString();
          return send(204);
        }
      }
      if (req.method === 'GET' && url.pathname === '/v2/account') {
        return send(200, {
          id: 'acc-1',
          account_number: 'PA000001',
          status: 'ACTIVE',
          currency: 'USD',
          cash: cash.toFixed(2),
          buying_power: cash.toFixed(2),
          equity: (cash + [...positions].reduce((s, [, q]) => s + q * opts.price, 0)).toFixed(2),
        });
      }
      if (req.method === 'GET' && url.pathname === '/v2/positions') {
        return send(
          200,
          [...positions].map(([symbol, qty]) => ({
            asset_id: randomUUID(),
            symbol,
            qty: String(qty),
            side: 'long',
            avg_entry_price: String(opts.price),
            current_price: String(opts.price),
            market_value: (qty * opts.price).toFixed(2),
          })),
        );
      }
      return fail(404, 40410000, 'endpoint not found');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    orders,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
