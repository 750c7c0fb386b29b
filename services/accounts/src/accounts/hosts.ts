import { z } from 'zod';

import { BusRequestError, callAborted, DomainError, generateHostCredential, hashSecret, newId, type Principal } from '@svc/kit';

import { actorOf, HOST_ID_RE, requireAccountWide, requireAuthority, requireManager, scopeWithin, verbCovers } from './access.js';
import { AccountsCore, decodeCursor, limitOf, Name, type Page, paged, parse, parseJson } from './core.js';
import type { HostRow } from './store.js';

/** Longest a host call may wait: below the gateway's gRPC deadline (10 s by default). */
export const MAX_HOST_CALL_MS = 8000;
/** Largest tool-call arguments. */
export const MAX_CALL_BYTES = 256 * 1024;

const HostInput = z.object({ name: Name });
const Tool = z
  .string()
  .min(1, 'is required')
  .max(200)
  .regex(/^[A-Za-z0-9_.:/-]+$/, 'may hold letters, digits and _ . : / - only');
const hostNotFound = () => new DomainError('not_found', 'host_not_found', 'Host not found.');

/** Hosts: machines paired with an account, and tool calls relayed to them over NATS. */
export class Hosts extends AccountsCore {
  async listHosts(p: Principal, accountId: string, page: Page): Promise<{ rows: HostRow[]; nextCursor?: string }> {
    await this.access(p, accountId);
    const limit = limitOf(page.limit);
    const rows = await this.store.hostsOf(accountId, { before: decodeCursor(page.cursor, HOST_ID_RE), limit: limit + 1 });
    return paged(rows, limit);
  }

  /** Pairs a machine: a host and its credential (svch_…, shown once, stored as a hash). */
  async pairHost(p: Principal, accountId: string, name: string): Promise<{ host: HostRow; credential: string }> {
    requireAuthority(p);
    const body = parse(HostInput, { name });
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    const credential = generateHostCredential();
    const actor = actorOf(p);
    const host = await this.sql.tx(async (q) => {
      const h = await this.store.insertHost(q, {
        id: newId('host'),
        account_id: accountId,
        name: body.name,
        credential_hash: hashSecret(credential),
        credential_prefix: credential.slice(0, 13),
        paired_by: actor,
      });
      await this.audit(q, {
        accountId,
        action: 'host.paired',
        actor,
        target: { kind: 'host', id: h.id },
        data: { hostId: h.id, name: h.name, credentialPrefix: h.credential_prefix },
      });
      return h;
    });
    this.kick();
    return { host, credential };
  }

  /** Unpairs a host: its credential stops working. Unpairing again succeeds. */
  async unpairHost(p: Principal, hostId: string): Promise<void> {
    requireAuthority(p);
    if (!HOST_ID_RE.test(hostId)) throw hostNotFound();
    const host = (await this.store.hostById(hostId)) ?? (await this.store.unpairedHost(hostId));
    if (!host) throw hostNotFound();
    const { standing } = await this.access(p, host.account_id).catch((err) => {
      throw err instanceof DomainError && err.kind === 'not_found' ? hostNotFound() : err;
    });
    requireManager(standing);
    requireAccountWide(p);
    if (host.unpaired_at) return;
    const actor = actorOf(p);
    const done = await this.sql.tx(async (q) => {
      const live = await this.store.hostById(hostId, q, true);
      if (!live) return false;
      await this.store.unpairHost(q, hostId);
      await this.audit(q, { accountId: live.account_id, action: 'host.unpaired', actor, target: { kind: 'host', id: hostId }, data: { hostId } });
      return true;
    });
    if (done) this.kick();
  }

  /**
   * May the caller call this host? Anyone acting in the host's account, or a holder of a live grant
   * of `hosts.call` from that account on the host (scope `account` or `host:<id>`).
   */
  private async mayCallHost(p: Principal, host: HostRow): Promise<boolean> {
    try {
      await this.access(p, host.account_id);
      return true;
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'not_found')) throw err;
    }
    const holders = [p.agentId, p.hostId, p.userId, p.accountId].filter((x): x is string => !!x);
    const held = await this.store.grantsHeld([...new Set(holders)], { limit: 200 });
    return held.some(
      (g) =>
        g.account_id === host.account_id &&
        (g.scope === 'account' || g.scope === '*' || scopeWithin(`host:${host.id}`, g.scope)) &&
        g.verbs.some((v) => verbCovers(v, 'hosts.call')),
    );
  }

  /**
   * Relays a tool call to the paired host over NATS request/reply; 503 host_offline when it is not
   * connected. When the caller gives up (`signal`: a run's tool call aborted, docs/threads.md) the
   * wait ends at once and the host is told (`hosts.<id>.abort`, which the gateway holding its socket
   * passes on as an `abort` frame); what the host's tool had done by then stands.
   */
  async callHost(
    p: Principal,
    hostId: string,
    input: { tool: string; argumentsJson: string; timeoutMs?: number },
    signal?: AbortSignal,
  ): Promise<{ callId: string; result: unknown; durationMs: number; host: HostRow }> {
    if (!HOST_ID_RE.test(hostId)) throw hostNotFound();
    const host = await this.store.hostById(hostId);
    if (!host || !(await this.mayCallHost(p, host))) throw hostNotFound();
    const tool = parse(Tool, input.tool);
    if (Buffer.byteLength(input.argumentsJson || '{}') > MAX_CALL_BYTES) {
      throw new DomainError('too_large', 'payload_too_large', 'Tool arguments are at most 256 KiB.');
    }
    const args = input.argumentsJson ? parseJson(input.argumentsJson, 'arguments') : {};
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw new DomainError('invalid_argument', 'invalid_request', 'arguments: must be a JSON object');
    }
    const timeoutMs = Math.min(
      Math.max(input.timeoutMs ?? (await this.currentSettings(host.account_id)).doc.hosts.callTimeoutMs, 100),
      MAX_HOST_CALL_MS,
    );
    const callId = newId('call');
    const started = Date.now();
    const bus = await this.deps.bus();
    let result: unknown;
    let onAbort: (() => void) | undefined;
    try {
      const answer = bus.request(
        `hosts.${host.id}.call`,
        { callId, hostId: host.id, accountId: host.account_id, tool, arguments: args, caller: actorOf(p), timeoutMs },
        timeoutMs,
      );
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => {
          bus.signal(`hosts.${host.id}.abort`, { callId });
          reject(callAborted());
        };
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
      });
      answer.catch(() => {}); // an answer after the abort is dropped
      result = await (signal ? Promise.race([answer, aborted]) : answer);
    } catch (err) {
      if (err instanceof BusRequestError) {
        if (err.code === 'no_responders') throw new DomainError('unavailable', 'host_offline', 'The host is not connected.');
        if (err.code === 'timeout') throw new DomainError('deadline_exceeded', 'host_timeout', `The host did not answer within ${timeoutMs} ms.`);
        throw new DomainError('unavailable', 'host_error', `The host failed to answer: ${err.message}`);
      }
      throw err;
    } finally {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
    this.store.touchHost(host.id).catch(() => {});
    return { callId, result, durationMs: Date.now() - started, host };
  }

  async verifyHostCredential(p: Principal, hash: string): Promise<HostRow> {
    if (p.kind !== 'system') throw new DomainError('forbidden', 'internal_only', 'This call is for platform services only.');
    const invalid = () => new DomainError('unauthenticated', 'invalid_host_credential', 'The host credential is invalid or unpaired.');
    if (!/^[0-9a-f]{64}$/.test(hash)) throw invalid();
    const host = await this.store.hostByCredentialHash(hash);
    if (!host) throw invalid();
    return host;
  }
}
