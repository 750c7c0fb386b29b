import type { HttpMethod, PrincipalKind, Route, ServiceName } from '../route.js';
import { Unspecified } from '../route.js';

/**
 * Operations whose service has not landed yet. They are part of the API's shape (so they show in
 * OpenAPI and answer 501 with the error body, not 404); each moves to its own file with real
 * schemas when its service is built.
 */
const planned: Array<[HttpMethod, string, ServiceName, string, { authority?: boolean; principals?: PrincipalKind[] }?]> = [
  ['get', '/accounts', 'accounts', 'List the accounts the caller belongs to.'],
  ['post', '/accounts', 'accounts', 'Create an organization (or, for the operator, a user account).'],
  ['get', '/accounts/me/chain', 'accounts', "The caller's chain of authority."],
  ['get', '/accounts/:id', 'accounts', 'Get an account.'],
  ['get', '/accounts/:id/settings', 'accounts', "Get an account's settings."],
  ['put', '/accounts/:id/settings', 'accounts', "Replace an account's settings.", { authority: true }],
  ['patch', '/accounts/:id/settings', 'accounts', "Merge into an account's settings.", { authority: true }],
  ['get', '/accounts/:id/standing-grants', 'accounts', 'List standing grants given by an account.'],
  ['post', '/accounts/:id/standing-grants', 'accounts', 'Create a standing grant.', { authority: true }],
  ['delete', '/standing-grants/:id', 'accounts', 'Delete a standing grant.', { authority: true }],
  ['get', '/standing-grants/held', 'accounts', 'Grants the caller holds.'],
  ['get', '/accounts/:id/signing-key', 'accounts', "An account's current public signing key."],
  ['post', '/accounts/:id/signing-key/rotate', 'accounts', 'Rotate the signing key.', { authority: true }],
  ['get', '/accounts/:id/hosts', 'accounts', 'Hosts paired to an account.'],
  ['post', '/hosts/:hostId/call', 'accounts', 'Relay a tool call to a paired host.'],
  ['get', '/agents', 'agents', 'List agents.'],
  ['post', '/agents', 'agents', 'Create an agent.'],
  ['get', '/agents/:id', 'agents', 'Get an agent.'],
  ['patch', '/agents/:id', 'agents', 'Update an agent.'],
  ['delete', '/agents/:id', 'agents', 'Delete an agent (its keys are revoked at once).'],
  ['get', '/default-agents', 'agents', 'Default agents.'],
  ['put', '/default-agents', 'agents', 'Set default agents.'],
  ['get', '/drive', 'drive', 'List a folder.'],
  ['post', '/drive/upload', 'drive', 'Upload a new file.'],
  ['post', '/drive/folders', 'drive', 'Create a folder.'],
  ['get', '/drive/:id/content', 'drive', "Read a file's content."],
  ['put', '/drive/:id/content', 'drive', "Replace a file's content (If-Match)."],
  ['patch', '/drive/:id', 'drive', 'Rename or move.'],
  ['delete', '/drive/:id', 'drive', 'Delete.'],
  ['get', '/models', 'models', 'List models.'],
  ['get', '/profiles', 'profiles', 'List taste profiles.'],
  ['post', '/profiles', 'profiles', 'Create a taste profile.'],
  ['get', '/profiles/:id', 'profiles', 'Get a taste profile.'],
  ['patch', '/profiles/:id', 'profiles', 'Update a taste profile (If-Match).'],
  ['delete', '/profiles/:id', 'profiles', 'Delete a taste profile.'],
  ['post', '/profiles/:id/commits', 'profiles', 'Commit working changes.'],
  ['post', '/profiles/:id/branches', 'profiles', 'Create a branch.'],
  ['delete', '/profiles/:id/branches/:branchId', 'profiles', 'Delete a branch.'],
  ['post', '/profiles/:id/checkout', 'profiles', 'Switch branch.'],
  ['post', '/profiles/:id/rollback', 'profiles', 'Roll back to a version.'],
  ['post', '/profiles/:id/merge', 'profiles', 'Merge branches.'],
  ['get', '/profiles/:id/log', 'profiles', 'History of a branch.'],
  ['get', '/profiles/:id/diff', 'profiles', 'Difference between two versions.'],
];

/** Planned operations, minus those some route file already declares (that one wins). */
export function plannedRoutes(declared: Route[]): Route[] {
  const taken = new Set(declared.map((r) => `${r.method} ${r.path}`));
  return all.filter((r) => !taken.has(`${r.method} ${r.path}`));
}

const all: Route[] = planned.map(([method, path, service, summary, o = {}]) => ({
  id: `${service}.${method}${path.replace(/[/:-]+(\w)?/g, (_, c?: string) => (c ? c.toUpperCase() : ''))}`,
  method,
  path,
  summary: `${summary} (not implemented yet: answers 501)`,
  tag: service,
  response: Unspecified,
  auth: 'key',
  principals: o.principals ?? ['human', 'agent'],
  authority: o.authority ?? false,
  handler: { kind: 'unimplemented', service },
}));
