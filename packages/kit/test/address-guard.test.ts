import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { checkOutboundUrl, isBlockedAddress, pinnedLookup } from '@svc/kit';

// Outbound URLs a user chose (SSRF): only public addresses, after DNS resolution.

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

test('private, loopback, link-local, metadata and reserved addresses are blocked, in IPv4 and IPv6', () => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::7f00:1',
    'ff02::1',
  ]) {
    expect([a, isBlockedAddress(a)]).toEqual([a, true]);
  }
  for (const a of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
    expect([a, isBlockedAddress(a)]).toEqual([a, false]);
});

test('a URL is checked after resolution: every address must be public', async () => {
  await expect(checkOutboundUrl('https://api.example.com/v1', { lookup: resolvesTo('93.184.216.34') })).resolves.toMatchObject({
    addresses: [{ address: '93.184.216.34', family: 4 }],
  });
  // One private answer among public ones is enough to refuse (a rebinding setup).
  await expect(checkOutboundUrl('https://api.example.com', { lookup: resolvesTo('93.184.216.34', '10.0.0.5') })).rejects.toMatchObject({
    code: 'address_not_allowed',
  });
  // Literal and encoded addresses: the URL parser normalises them first.
  for (const url of [
    'http://127.0.0.1:8080',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://169.254.169.254/latest',
  ]) {
    await expect(checkOutboundUrl(url)).rejects.toMatchObject({ code: 'address_not_allowed' });
  }
  // The real resolver: localhost is loopback.
  await expect(checkOutboundUrl('http://localhost:11434/v1')).rejects.toMatchObject({ code: 'address_not_allowed' });
  await expect(checkOutboundUrl('ftp://example.com')).rejects.toMatchObject({ code: 'address_not_allowed' });
  await expect(checkOutboundUrl('https://user:pass@example.com')).rejects.toMatchObject({ code: 'address_not_allowed' });
  await expect(checkOutboundUrl('not a url')).rejects.toMatchObject({ code: 'invalid_request' });
  await expect(checkOutboundUrl('https://nowhere.invalid', { lookup: resolvesTo() })).rejects.toMatchObject({ code: 'address_not_allowed' });
});

test('the operator may allow hosts and networks (an in-cluster model server)', async () => {
  await expect(
    checkOutboundUrl('http://vllm.models.svc:8000/v1', { lookup: resolvesTo('10.0.3.7'), allow: ['vllm.models.svc'] }),
  ).resolves.toBeDefined();
  await expect(checkOutboundUrl('http://10.0.3.7:8000/v1', { allow: ['10.0.0.0/16'] })).resolves.toBeDefined();
  await expect(checkOutboundUrl('http://10.1.3.7:8000/v1', { allow: ['10.0.0.0/16'] })).rejects.toMatchObject({ code: 'address_not_allowed' });
  await expect(checkOutboundUrl('http://[fd00::5]/', { allow: ['fd00::/8'] })).resolves.toBeDefined();
});

test('a pinned lookup connects to the checked address, whatever the name resolves to later', async () => {
  const server = http.createServer((_req, res) => res.end('pinned'));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  try {
    const checked = await checkOutboundUrl(`http://model.internal:${port}/`, { lookup: resolvesTo('127.0.0.1'), allow: ['model.internal'] });
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: 'model.internal', port, path: '/', lookup: pinnedLookup(checked) }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    expect(body).toBe('pinned');
  } finally {
    await new Promise<void>((ok) => server.close(() => ok()));
  }
});
