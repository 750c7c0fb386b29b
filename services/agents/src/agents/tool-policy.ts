import { SEARCH_TOOLS } from '@svc/tools';

/**
 * The tools an agent may call in its runs: its `tools` (names, or patterns with `*`), or when it
 * names none, the default set below. A call runs as the agent (channel `mcp`) through the
 * dispatcher: the API's authorization, validation, tenancy and errors, never more than the agent's
 * own authority. call_tool reaches only tools the agent may call.
 */
export const DEFAULT_TOOLS = [
  'whoami',
  'list_drive',
  'read_drive_file',
  'write_drive_file',
  'list_models',
  'get_credits',
  'run_code',
  'list_threads',
  'get_thread',
  SEARCH_TOOLS,
];

const patternOf = (p: string) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);

/** Whether an agent with these tool patterns (null: the default set) may call `name`. */
export const toolAllowed = (patterns: string[] | null, name: string): boolean => (patterns ?? DEFAULT_TOOLS).some((p) => patternOf(p).test(name));
