import type { Principal } from '@svc/kit';

import type { Standing } from './access.js';
import { AccountOps } from './accounts.js';
import { Audit } from './audit.js';
import { AccountsCore, type AccountsDeps } from './core.js';
import { Grants } from './grants.js';
import { Hosts } from './hosts.js';
import { Lookups } from './lookups.js';
import { Members } from './members.js';
import { AccountSettings } from './settings.js';
import { SigningKeys } from './signing.js';

export { type ChainLink } from './accounts.js';
export { type AccountsDeps, type Page } from './core.js';
export { Scope } from './grants.js';
export { MAX_CALL_BYTES, MAX_HOST_CALL_MS } from './hosts.js';
export { MAX_SIGN_BYTES, type PublicKeyView } from './signing.js';

/**
 * The rules of accounts, organizations and everything that gives or changes authority: one
 * operation per method, each served by one part (accounts.ts, members.ts, settings.ts, grants.ts,
 * signing.ts, hosts.ts, audit.ts; core.ts holds what they share).
 */
export class AccountsDomain extends AccountsCore {
  private readonly parts: {
    accounts: AccountOps;
    members: Members;
    settings: AccountSettings;
    grants: Grants;
    signing: SigningKeys;
    hosts: Hosts;
    audit: Audit;
    lookups: Lookups;
  };

  constructor(deps: AccountsDeps) {
    super(deps);
    this.parts = {
      accounts: new AccountOps(deps),
      members: new Members(deps),
      settings: new AccountSettings(deps),
      grants: new Grants(deps),
      signing: new SigningKeys(deps),
      hosts: new Hosts(deps),
      audit: new Audit(deps),
      lookups: new Lookups(deps),
    };
  }

  canChangeAuthority(p: Principal, standing: Standing | null): boolean {
    return this.parts.accounts.canChangeAuthority(p, standing);
  }

  // Accounts
  listAccounts(...a: Parameters<AccountOps['listAccounts']>) {
    return this.parts.accounts.listAccounts(...a);
  }
  getAccount(...a: Parameters<AccountOps['getAccount']>) {
    return this.parts.accounts.getAccount(...a);
  }
  createAccount(...a: Parameters<AccountOps['createAccount']>) {
    return this.parts.accounts.createAccount(...a);
  }
  chain(...a: Parameters<AccountOps['chain']>) {
    return this.parts.accounts.chain(...a);
  }

  // Members
  listMembers(...a: Parameters<Members['listMembers']>) {
    return this.parts.members.listMembers(...a);
  }
  addMember(...a: Parameters<Members['addMember']>) {
    return this.parts.members.addMember(...a);
  }
  removeMember(...a: Parameters<Members['removeMember']>) {
    return this.parts.members.removeMember(...a);
  }

  // Settings
  getSettings(...a: Parameters<AccountSettings['getSettings']>) {
    return this.parts.settings.getSettings(...a);
  }
  writeSettings(...a: Parameters<AccountSettings['writeSettings']>) {
    return this.parts.settings.writeSettings(...a);
  }

  // Standing grants
  listGrants(...a: Parameters<Grants['listGrants']>) {
    return this.parts.grants.listGrants(...a);
  }
  listHeld(...a: Parameters<Grants['listHeld']>) {
    return this.parts.grants.listHeld(...a);
  }
  createGrant(...a: Parameters<Grants['createGrant']>) {
    return this.parts.grants.createGrant(...a);
  }
  deleteGrant(...a: Parameters<Grants['deleteGrant']>) {
    return this.parts.grants.deleteGrant(...a);
  }

  // Signing keys
  getSigningKey(...a: Parameters<SigningKeys['getSigningKey']>) {
    return this.parts.signing.getSigningKey(...a);
  }
  rotateSigningKey(...a: Parameters<SigningKeys['rotateSigningKey']>) {
    return this.parts.signing.rotateSigningKey(...a);
  }
  sign(...a: Parameters<SigningKeys['sign']>) {
    return this.parts.signing.sign(...a);
  }
  verify(...a: Parameters<SigningKeys['verify']>) {
    return this.parts.signing.verify(...a);
  }

  // Hosts
  listHosts(...a: Parameters<Hosts['listHosts']>) {
    return this.parts.hosts.listHosts(...a);
  }
  pairHost(...a: Parameters<Hosts['pairHost']>) {
    return this.parts.hosts.pairHost(...a);
  }
  unpairHost(...a: Parameters<Hosts['unpairHost']>) {
    return this.parts.hosts.unpairHost(...a);
  }
  callHost(...a: Parameters<Hosts['callHost']>) {
    return this.parts.hosts.callHost(...a);
  }
  verifyHostCredential(...a: Parameters<Hosts['verifyHostCredential']>) {
    return this.parts.hosts.verifyHostCredential(...a);
  }

  // Audit
  listAudit(...a: Parameters<Audit['listAudit']>) {
    return this.parts.audit.listAudit(...a);
  }
  auditRowsForAgentEvent(...a: Parameters<Audit['auditRowsForAgentEvent']>) {
    return this.parts.audit.auditRowsForAgentEvent(...a);
  }

  // One at a time
  getHost(...a: Parameters<Lookups['getHost']>) {
    return this.parts.lookups.getHost(...a);
  }
  renameHost(...a: Parameters<Lookups['renameHost']>) {
    return this.parts.lookups.renameHost(...a);
  }
  getMember(...a: Parameters<Lookups['getMember']>) {
    return this.parts.lookups.getMember(...a);
  }
  getAuditEvent(...a: Parameters<Lookups['getAuditEvent']>) {
    return this.parts.lookups.getAuditEvent(...a);
  }
  permissions(...a: Parameters<Lookups['permissions']>) {
    return this.parts.lookups.permissions(...a);
  }
}
