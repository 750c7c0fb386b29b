import dns from 'node:dns';
import net from 'node:net';

import { DomainError } from './errors.js';

/**
 * Guards outbound calls to addresses a user chose (a provider's custom `baseUrl`): the platform
 * must not be made to call its own network (SSRF). A URL is accepted only when every address its
 * host resolves to is public: not loopback, private, link-local (which holds the cloud metadata
 * service, 169.254.169.254), unique-local, carrier-grade NAT, multicast, reserved or unspecified,
 * in IPv4 or IPv6 (IPv4-mapped IPv6 included). The operator may allow hosts or networks anyway
 * (an in-cluster model server). The checked addresses are returned, so that the connection is
 * made to them and not to what a second DNS answer says (rebinding): see `pinnedLookup`.
 */

const BLOCKED = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net4, bits, 'ipv4');
}
for (const [net6, bits] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64 (maps IPv4, private ones included)
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (AWS metadata's fd00:ec2::254 among them)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net6, bits, 'ipv6');
}

export interface AddressGuardOptions {
  /** Hosts (exact names) and networks (`10.1.0.0/16`, `fd00::/8`) the operator allows anyway. */
  allow?: string[];
  /** How names are resolved (default: the system resolver, every address). */
  lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
}

export interface CheckedUrl {
  url: URL;
  /** The addresses the host resolved to, all checked: connect to these. */
  addresses: Array<{ address: string; family: number }>;
}

const refused = (why: string) => new DomainError('invalid_argument', 'address_not_allowed', `baseUrl: ${why}.`);

/** The IPv4 address inside an IPv4-mapped or -compatible IPv6 address (`::ffff:127.0.0.1`), if any. */
function embeddedIpv4(address: string): string | undefined {
  const m = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is one the platform must not call on a user's behalf. */
export function isBlockedAddress(address: string): boolean {
  const v4 = net.isIPv4(address) ? address : embeddedIpv4(address);
  if (v4) return BLOCKED.check(v4, 'ipv4');
  if (net.isIPv6(address)) return BLOCKED.check(address, 'ipv6');
  return true; // not an IP address at all
}

function allowedBy(allow: string[], host: string, address: string): boolean {
  for (const entry of allow) {
    const slash = entry.indexOf('/');
    if (slash < 0) {
      if (entry.toLowerCase() === host.toLowerCase() || entry === address) return true;
      continue;
    }
    const base = entry.slice(0, slash);
    const bits = Number(entry.slice(slash + 1));
    const family = net.isIPv4(base) ? 'ipv4' : 'ipv6';
    const list = new net.BlockList();
    list.addSubnet(base, bits, family);
    const v4 = embeddedIpv4(address);
    if (list.check(v4 ?? address, v4 ? 'ipv4' : net.isIPv4(address) ? 'ipv4' : 'ipv6')) return true;
  }
  return false;
}

const systemLookup = async (host: string) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Checks a URL a user gave for outbound calls: http(s) only, no credentials in it, and every address
 * its host resolves to public (or allowed by the operator). Refusals are 400 `address_not_allowed`.
 */
export async function checkOutboundUrl(raw: string, options: AddressGuardOptions = {}): Promise<CheckedUrl> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_request', 'baseUrl: must be an absolute http or https URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused('must be an http or https URL');
  if (url.username || url.password) throw refused('must not carry credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  if (net.isIP(host)) addresses = [{ address: host, family: net.isIP(host) }];
  else {
    try {
      addresses = await (options.lookup ?? systemLookup)(host);
    } catch {
      throw refused(`the host ${host} does not resolve`);
    }
  }
  if (!addresses.length) throw refused(`the host ${host} does not resolve`);
  const allow = options.allow ?? [];
  for (const { address } of addresses) {
    if (isBlockedAddress(address) && !allowedBy(allow, host, address)) {
      throw refused(`${host} resolves to ${address}, a private, loopback, link-local or reserved address`);
    }
  }
  return { url, addresses };
}

/**
 * A `lookup` for http agents and clients that answers with the addresses already checked, so the
 * connection goes where the check looked (a second DNS answer cannot point it elsewhere).
 */
export function pinnedLookup(checked: CheckedUrl): net.LookupFunction {
  const first = checked.addresses[0]!;
  return ((_host: string, options: dns.LookupOptions | number | undefined, callback: (...args: unknown[]) => void) => {
    const all = typeof options === 'object' && options?.all;
    if (all) callback(null, checked.addresses);
    else callback(null, first.address, first.family);
  }) as unknown as net.LookupFunction;
}
