import type { z } from 'zod';

import type { KeysClient } from '@svc/clients';
import { DisplayName } from '@svc/contract';
import { type Bus, DomainError, enqueueEvent, type ErrorCode, type OutboxRelay, parseInput, type Principal, type Queryable } from '@svc/kit';

import { DEFAULT_SETTINGS, type Settings, validateSettings } from '../settings.js';
import { ACCOUNT_ID_RE, accountNotFound, type Standing } from './access.js';
import { AgentDirectory } from './directory.js';
import type { KeyVault } from './signing-keys.js';
import { type AccountRow, type AccountStore, type Actor, type Role, SCHEMA } from './store.js';

/**
 * What every part of the accounts rules shares: the store, the caller's standing in an account,
 * the audit record of a change (in the change's transaction, through the outbox), the account's
 * settings document, and the input helpers.
 */

export interface AccountsDeps {
  store: AccountStore;
  outbox: () => OutboxRelay | undefined;
  bus: () => Promise<Bus>;
  vault: KeyVault;
  keysClient: () => KeysClient;
  systemToken: () => Promise<string>;
  log: { warn(obj: unknown, msg: string): void };
}

export interface Page {
  limit?: number;
  cursor?: string;
}

// Inputs, validated here too: the gateway is not the only possible caller. -----------------------

export const Name = DisplayName;

export function parse<T extends z.ZodType>(schema: T, value: unknown, code: ErrorCode = 'invalid_request'): z.infer<T> {
  return parseInput(schema, value, { code });
}

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new DomainError('invalid_argument', 'invalid_json', `${what} is not valid JSON.`);
  }
}

// Cursors: the last id of a page, opaque to the caller. ------------------------------------------

export const encodeCursor = (id: string) => Buffer.from(id).toString('base64url');
export function decodeCursor(c: string | undefined, re: RegExp): string | undefined {
  if (!c) return undefined;
  const id = Buffer.from(c, 'base64url').toString();
  if (!re.test(id)) throw new DomainError('invalid_argument', 'invalid_cursor', 'The cursor is not valid.');
  return id;
}
export const limitOf = (l: number | undefined) => Math.min(Math.max(l || 50, 1), 200);
export function paged<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; nextCursor?: string } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : undefined };
}

export const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';

/** The base of each part of the rules (accounts, members, settings, grants, signing, hosts, audit). */
export class AccountsCore {
  readonly store: AccountStore;
  /** Agents as the agents service keeps them here (the chain of authority, grantees): see directory.ts. */
  readonly agents: AgentDirectory;

  constructor(protected readonly deps: AccountsDeps) {
    this.store = deps.store;
    this.agents = new AgentDirectory(deps.store);
  }

  protected get sql() {
    return this.store.sql;
  }

  /**
   * The caller's standing in an account, or 404. The acting account (x-svc-account or the key's
   * own) always counts; a person may also name their own account or an organization they belong
   * to by id, unless their key is project-scoped.
   */
  async access(p: Principal, accountId: string): Promise<{ account: AccountRow; standing: Standing }> {
    if (!ACCOUNT_ID_RE.test(accountId)) throw accountNotFound();
    let standing: Standing | null = null;
    if (p.kind === 'system') standing = 'system';
    else if (accountId === p.accountId) {
      if (p.kind === 'agent') standing = 'agent';
      else if (p.kind === 'host') standing = 'host';
      else standing = p.userId === accountId ? 'owner' : ((p.role as Role | undefined) ?? null);
    } else if (p.kind === 'human' && !p.projectId) {
      standing = p.userId === accountId ? 'owner' : await this.store.membership(accountId, p.userId!);
    }
    if (!standing) throw accountNotFound();
    const account = await this.store.byId(accountId);
    if (!account) throw accountNotFound();
    return { account, standing };
  }

  /** The audit record of an authority change, in the change's transaction, published through the outbox. */
  protected async audit(
    q: Queryable,
    e: { accountId: string; action: string; actor: Actor; target?: { kind: string; id: string }; data?: Record<string, unknown> },
  ): Promise<void> {
    const data = e.data ?? {};
    const envelope = await enqueueEvent(q, SCHEMA, {
      subject: `accounts.${e.action}`,
      accountId: e.accountId,
      data: { action: e.action, actor: e.actor, target: e.target ?? null, ...data },
    });
    await this.store.insertAudit(q, {
      id: envelope.id,
      account_id: e.accountId,
      action: e.action,
      actor: e.actor,
      target_kind: e.target?.kind ?? null,
      target_id: e.target?.id ?? null,
      data,
      occurred_at: new Date(envelope.occurredAt),
    });
  }

  protected kick(): void {
    this.deps.outbox()?.kick();
  }

  /** The account's settings document (defaults until first written). */
  protected async currentSettings(accountId: string, q?: Queryable, lock = false): Promise<{ doc: Settings; updatedAt: Date | null }> {
    const row = await this.store.settings(accountId, q, lock);
    if (!row) return { doc: DEFAULT_SETTINGS, updatedAt: null };
    // A stored document is valid by construction; parsing again fills defaults added since.
    return { doc: validateSettings(row.document), updatedAt: row.updated_at };
  }
}
