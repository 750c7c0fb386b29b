import net from 'node:net';
import readline from 'node:readline';

import type { LinkEvents, UnitDriver, UnitLink } from './driver.js';

/**
 * A device on a network socket (or a serial line behind a terminal server such as ser2net)
 * speaking the line protocol of driver.ts: newline-terminated ASCII lines both ways.
 */
export class SocketDriver implements UnitDriver {
  readonly kind = 'socket';

  constructor(private readonly address: { host: string; port: number; connectTimeoutMs?: number }) {}

  describe() {
    return { address: `${this.address.host}:${this.address.port}` };
  }

  connect(events: LinkEvents): Promise<UnitLink> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.address.host, port: this.address.port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => socket.destroy(new Error('connect timeout')), this.address.connectTimeoutMs ?? 5000);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        socket.on('error', () => {});
        readline.createInterface({ input: socket, crlfDelay: Infinity }).on('line', (l) => events.line(l));
        socket.once('close', () => events.closed('the device closed the connection'));
        resolve({
          write: (line) => new Promise<void>((ok, fail) => socket.write(line + '\n', (err) => (err ? fail(err) : ok()))),
          close: async () => void socket.end(),
        });
      });
    });
  }
}
