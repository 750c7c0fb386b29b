import net from 'node:net';

/**
 * A TCP proxy a test puts between the stack and a backend, to take the backend away without
 * touching the machine's server: `close()` refuses new connections and cuts open ones, the
 * `blackhole` mode accepts connections and never answers, `listen()` (on the same port) brings it back.
 */
export type Mode = 'up' | 'blackhole';
export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  mode: Mode = 'up';
  constructor(private readonly upstream: { host: string; port: number }) {}

  async listen(): Promise<void> {
    const server = net.createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => {});
      if (this.mode === 'blackhole') return; // accepted, never answered
      const up = net.connect(this.upstream.port, this.upstream.host);
      this.sockets.add(up);
      up.on('close', () => this.sockets.delete(up));
      up.on('error', () => client.destroy());
      client.on('close', () => up.destroy());
      up.on('close', () => client.destroy());
      client.pipe(up).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Stops listening (connections refused) and cuts every open connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }
}
