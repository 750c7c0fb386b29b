import type { Route } from '@svc/api';

/**
 * The tools the spec names, by the operation each one is (exact names, no aliases: the
 * operation's tool IS this name). An entry whose route does not exist yet is kept: the tool
 * appears when the route lands.
 */
export const SPEC_TOOL_NAMES: Readonly<Record<string, string>> = Object.freeze({
  'me.get': 'whoami',
  'drive.list': 'list_drive',
  'drive.read': 'read_drive_file',
  'drive.upload': 'write_drive_file',
  'models.list': 'list_models',
  'credits.get': 'get_credits',
  'threads.list': 'list_threads',
  'threads.create': 'create_thread',
  'threads.get': 'get_thread',
  'threads.inject': 'send_message',
  'code.run': 'run_code',
  'sites.create': 'create_site',
  'sites.deploy': 'deploy_site',
  'trading.venues': 'trade_venues',
  'trading.order': 'trade_order',
  'trading.account': 'trade_account',
  'trading.cancel': 'trade_cancel',
  'hosts.list': 'list_hosts',
  'hosts.call': 'host_call',
});

/** The two tools that are not operations: they make every tool reachable from the first page. */
export const SEARCH_TOOLS = 'search_tools';
export const CALL_TOOL = 'call_tool';

/**
 * A route id as a snake_case tool name: dots and camelCase humps become underscores
 * (`drive.createFolder` → `drive_create_folder`, `apiKeys.revokeByQuery` → `api_keys_revoke_by_query`).
 */
export function derivedName(routeId: string): string {
  return routeId
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

/** The tool name of an operation: the spec's name when it has one, else the derived one. */
export function toolName(route: Pick<Route, 'id'>): string {
  return SPEC_TOOL_NAMES[route.id] ?? derivedName(route.id);
}
