import http from 'node:http';

/** A raw HTTP request (fetch would not let a test set Host or Origin freely). */
export function rawRequest(
  port: number,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string; address?: string },
): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: opts.address ?? '127.0.0.1',
        port,
        method: opts.method ?? 'POST',
        path: opts.path ?? '/control/list_units',
        headers: opts.headers,
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Calls a control tool on a local endpoint the way a local client does. */
export async function control(port: number, credential: string, tool: string, args: unknown = {}) {
  return rawRequest(port, {
    path: `/control/${tool}`,
    headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: JSON.stringify(args),
  });
}
