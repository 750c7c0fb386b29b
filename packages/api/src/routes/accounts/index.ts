import { accountRoutes } from './accounts.js';
import { auditRoutes } from './audit.js';
import { grantRoutes } from './grants.js';
import { hostRoutes } from './hosts.js';
import { lookupRoutes } from './lookups.js';
import { memberRoutes } from './members.js';
import { settingsRoutes } from './settings.js';
import { signingRoutes } from './signing.js';

/**
 * Accounts (issue 4): accounts and organizations, members, settings, standing grants, signing
 * keys, hosts and the audit trail. Authority-changing operations carry `authority: true` (an agent
 * key gets 403 human_principal_required at the gateway); the accounts service enforces the same
 * rules again, plus roles, project scope and the MCP channel. See docs/accounts.md.
 */

export { Account, Chain } from './accounts.js';
export { AuditEvent } from './audit.js';
export { Grant, grantJson } from './grants.js';
export { Host } from './hosts.js';
export { Member } from './members.js';
export { Settings } from './settings.js';
export { SigningKey } from './signing.js';

/** In matching order (static paths before parameters): /accounts/me/chain before /accounts/:id, /standing-grants/held before /standing-grants/:id. */
export const accountsRoutes = [
  ...accountRoutes,
  ...memberRoutes,
  ...settingsRoutes,
  ...grantRoutes,
  ...signingRoutes,
  ...hostRoutes,
  ...auditRoutes,
  ...lookupRoutes,
];
