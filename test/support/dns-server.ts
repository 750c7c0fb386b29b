import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

/**
 * A small authoritative DNS server on 127.0.0.1 that speaks the DNS wire protocol (RFC 1035) over
 * UDP: it answers TXT questions from the records a test sets, NXDOMAIN for a name it has none of,
 * and an empty answer (NODATA) for another type of a name it knows. What the drive's resolver
 * (node:dns, c-ares) sends is parsed as any server would: the header, one question; additional
 * records (EDNS) are ignored. A name can be made to fail (SERVFAIL, or no answer at all), as a
 * domain's broken or unreachable DNS does. Enough for custom-domain verification tests (docs/sites.md).
 */
export class DnsServer {
  private readonly txt = new Map<string, string[]>();
  /** The questions asked, `<name> <type>`, in order. */
  readonly questions: string[] = [];
  /** When set, questions are left unanswered (a server that does not respond). */
  silent = false;
  /** Names whose questions fail: answered SERVFAIL, or left unanswered (`silent`: the resolver times out). */
  private readonly failing = new Map<string, 'servfail' | 'silent'>();

  private constructor(private readonly socket: dgram.Socket) {
    socket.on('message', (msg, from) => {
      if (this.silent) return;
      const answer = this.answer(msg);
      if (answer) socket.send(answer, from.port, from.address);
    });
  }

  static async start(): Promise<DnsServer> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    return new DnsServer(socket);
  }

  /** `127.0.0.1:<port>`, as SVC_SITES_DNS_SERVERS takes it. */
  get address(): string {
    const a = this.socket.address() as AddressInfo;
    return `${a.address}:${a.port}`;
  }

  setTxt(name: string, values: string[]): void {
    this.txt.set(name.toLowerCase().replace(/\.$/, ''), values);
  }

  remove(name: string): void {
    this.txt.delete(name.toLowerCase().replace(/\.$/, ''));
  }

  /** Makes the questions of a name fail the way given; `null`: answered again. */
  fail(name: string, how: 'servfail' | 'silent' | null): void {
    const key = name.toLowerCase().replace(/\.$/, '');
    if (how) this.failing.set(key, how);
    else this.failing.delete(key);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  /** The response to a query, or undefined for a message that is not one. */
  private answer(msg: Buffer): Buffer | undefined {
    if (msg.length < 12) return undefined;
    const id = msg.readUInt16BE(0);
    const flags = msg.readUInt16BE(2);
    if (flags & 0x8000) return undefined; // a response, not a query
    const qdcount = msg.readUInt16BE(4);
    const opcode = (flags >> 11) & 0xf;
    const rd = flags & 0x0100;
    const header = (rcode: number, ancount: number, questions: number) => {
      const h = Buffer.alloc(12);
      h.writeUInt16BE(id, 0);
      // QR, the query's opcode, AA, its RD, RA, and the response code.
      h.writeUInt16BE(0x8000 | (opcode << 11) | 0x0400 | rd | 0x0080 | rcode, 2);
      h.writeUInt16BE(questions, 4);
      h.writeUInt16BE(ancount, 6);
      return h;
    };
    if (opcode !== 0 || qdcount !== 1) return header(4, 0, 0); // NOTIMP
    // The question: labels up to the root, then its type and class.
    const labels: string[] = [];
    let at = 12;
    for (;;) {
      if (at >= msg.length) return header(1, 0, 0); // FORMERR
      const len = msg[at]!;
      if (len === 0) {
        at += 1;
        break;
      }
      if (len & 0xc0 || at + 1 + len > msg.length) return header(1, 0, 0);
      labels.push(msg.toString('latin1', at + 1, at + 1 + len));
      at += 1 + len;
    }
    if (at + 4 > msg.length) return header(1, 0, 0);
    const qtype = msg.readUInt16BE(at);
    const question = msg.subarray(12, at + 4);
    const name = labels.join('.').toLowerCase();
    this.questions.push(`${name} ${qtype}`);
    const failure = this.failing.get(name);
    if (failure === 'silent') return undefined;
    if (failure === 'servfail') return Buffer.concat([header(2, 0, 1), question]);
    const values = this.txt.get(name);
    if (!values) return Buffer.concat([header(3, 0, 1), question]); // NXDOMAIN
    if (qtype !== 16) return Buffer.concat([header(0, 0, 1), question]); // NODATA
    const records = values.map((value) => {
      // A TXT record's data: character-strings of at most 255 bytes each.
      const bytes = Buffer.from(value, 'utf8');
      const parts: Buffer[] = [];
      for (let i = 0; i < bytes.length || i === 0; i += 255) {
        const chunk = bytes.subarray(i, i + 255);
        parts.push(Buffer.from([chunk.length]), chunk);
        if (bytes.length === 0) break;
      }
      const rdata = Buffer.concat(parts);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(16, 2); // TXT
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6); // TTL
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    return Buffer.concat([header(0, records.length, 1), question, ...records]);
  }
}
