#!/usr/bin/env node
'use strict';
// What custom domains cost (docs/sites.md, "Custom domains"), in one run on one machine:
//   1. GET /sites/bench/ (the path form; no host lookup),
//   2. GET / on the site's verified custom domain (Host: bench.example.com: the gateway's kept
//      "served" answer, then OpenSiteFile by domain),
//   3. GET /health on Host 127.0.0.1 (an IP: never looked up),
//   4. GET /health on Host api.bench-example.com (a name that could be a domain: the gateway's kept
//      "not ours" answer, then the API as usual).
// The domain is verified through a DNS server of the script's own on 127.0.0.1 (UDP, TXT only).
// Reports requests/s, p50/p99 latency, the server's CPU time per request; 2 is compared with 1,
// 4 with 3. Backends follow the environment (DATABASE_URL etc.), embedded otherwise.
// Usage: node scripts/bench/sites-domains.js [seconds=5] [rounds=3]
const dgram = require('node:dgram');

const { load, measure, startTarget } = require('./lib.js');

/** Answers TXT questions from `records` (name -> value), NXDOMAIN otherwise. */
async function dnsServer(records) {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, from) => {
    let at = 12;
    const labels = [];
    while (msg[at]) {
      labels.push(msg.toString('latin1', at + 1, at + 1 + msg[at]));
      at += 1 + msg[at];
    }
    const question = msg.subarray(12, at + 5);
    const value = records.get(labels.join('.').toLowerCase());
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8580 | (value ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(value ? 1 : 0, 6);
    const parts = [header, question];
    if (value) {
      const txt = Buffer.from(value);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(16, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(txt.length + 1, 10);
      parts.push(rr, Buffer.from([txt.length]), txt);
    }
    socket.send(Buffer.concat(parts), from.port, from.address);
  });
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
}

async function main() {
  const seconds = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 3);
  const html = `<!doctype html><title>bench</title>\n${'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n'.repeat(128)}`.slice(
    0,
    8192,
  );
  const records = new Map();
  const dns = await dnsServer(records);
  const stack = await startTarget('stack', { SVC_SITES_DNS_SERVERS: `127.0.0.1:${dns.address().port}` });
  try {
    const base = `http://127.0.0.1:${stack.port}`;
    const auth = { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json' };
    const post = async (p, body) => {
      const res = await fetch(`${base}${p}`, { method: 'POST', headers: auth, body: JSON.stringify(body ?? {}) });
      if (res.status >= 300) throw new Error(`${p}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const site = await post('/sites', { slug: 'bench' });
    await post(`/sites/${site.id}/deployments`, { files: [{ path: 'index.html', content: html }] });
    const domain = await post(`/sites/${site.id}/domains`, { domain: 'bench.example.com' });
    records.set(domain.verification.name, domain.verification.value);
    const verified = await post(`/sites/${site.id}/domains/bench.example.com/verify`);
    if (verified.status !== 'verified') throw new Error(`not verified: ${JSON.stringify(verified)}`);

    const specs = [
      ['GET /sites/bench/ (path form)', '/sites/bench/', {}],
      ['GET / on Host bench.example.com (custom domain)', '/', { host: 'bench.example.com' }],
      ['GET /health on Host 127.0.0.1 (API)', '/health', {}],
      ['GET /health on Host api.bench-example.com (API, kept "not ours")', '/health', { host: 'api.bench-example.com' }],
    ];
    for (const [, p, headers] of specs) await load({ port: stack.port, path: p, headers, seconds: 2 });
    const results = specs.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [i, [name, p, headers]] of specs.entries()) {
        const r = await measure(stack, p, headers, seconds);
        if (r.errors) throw new Error(`${name}: ${r.errors} failed requests (statuses ${r.statuses})`);
        results[i].push(r);
      }
    }
    const median = (rs) => [...rs].sort((a, b) => a.rps - b.rps)[Math.floor(rs.length / 2)];
    const rows = specs.map(([name], i) => ({ name, ...median(results[i]), all: results[i].map((r) => r.rps.toFixed(0)).join(', ') }));
    console.log(
      `\nmedian of ${rounds} rounds of ${seconds}s per target, 32 keep-alive connections, node ${process.version}, backends: ${JSON.stringify(stack.backends)}\n`,
    );
    console.log('| target | req/s (rounds) | p50 ms | p99 ms | CPU µs/req | vs the row it is compared with |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const [i, r] of rows.entries()) {
      const against = i % 2 === 1 ? `${((r.rps / rows[i - 1].rps) * 100).toFixed(0)}%` : '100%';
      console.log(
        `| ${r.name} | ${r.rps.toFixed(0)} (${r.all}) | ${(r.p50 / 1000).toFixed(2)} | ${(r.p99 / 1000).toFixed(2)} | ${r.cpuPerRequestUs.toFixed(0)} | ${against} |`,
      );
    }
  } finally {
    await stack.stop();
    dns.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
