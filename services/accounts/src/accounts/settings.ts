import { DomainError, type Principal } from '@svc/kit';

import { canonicalJson, checkIfMatch, mergePatch, type Settings, settingsEtag, validateSettings } from '../settings.js';
import { actorOf, requireAccountWide, requireAuthority, requireManager } from './access.js';
import { AccountsCore, parseJson } from './core.js';

/** An account's settings document: read, replaced or merge-patched under If-Match. */
export class AccountSettings extends AccountsCore {
  async getSettings(p: Principal, accountId: string): Promise<{ doc: Settings; etag: string; updatedAt: Date | null }> {
    await this.access(p, accountId);
    const { doc, updatedAt } = await this.currentSettings(accountId);
    return { doc, etag: settingsEtag(doc), updatedAt };
  }

  /** PUT (replace) or PATCH (merge patch) under If-Match; an unchanged document is not a change. */
  async writeSettings(
    p: Principal,
    accountId: string,
    mode: 'replace' | 'merge',
    json: string,
    ifMatch: string | undefined,
  ): Promise<{ doc: Settings; etag: string; updatedAt: Date | null }> {
    requireAuthority(p);
    const { standing } = await this.access(p, accountId);
    requireManager(standing);
    requireAccountWide(p);
    const input = parseJson(json, 'The settings document');
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new DomainError('invalid_argument', 'invalid_settings', 'settings: must be a JSON object');
    }
    const actor = actorOf(p);
    const out = await this.sql.tx(async (q) => {
      await this.store.lockOrganization(q, accountId);
      const { doc: current, updatedAt } = await this.currentSettings(accountId, q, true);
      const currentEtag = settingsEtag(current);
      checkIfMatch(ifMatch, currentEtag);
      const next = validateSettings(mode === 'replace' ? input : mergePatch(current, input));
      if (canonicalJson(next) === canonicalJson(current)) return { doc: current, etag: currentEtag, updatedAt, changed: false };
      const etag = settingsEtag(next);
      const row = await this.store.putSettings(q, accountId, next, etag, actor);
      const changed = Object.keys(next).filter(
        (k) => canonicalJson((next as Record<string, unknown>)[k]) !== canonicalJson((current as Record<string, unknown>)[k]),
      );
      await this.audit(q, {
        accountId,
        action: 'settings.updated',
        actor,
        target: { kind: 'settings', id: accountId },
        data: { mode, changed, etag },
      });
      return { doc: next, etag, updatedAt: row.updated_at, changed: true };
    });
    if (out.changed) this.kick();
    return out;
  }
}
