import { SEARCH_TOOLS } from './names.js';

/**
 * The tools an agent may call in its runs: its `tools` (names, or patterns with `*`), or when it
 * names none, the default set below. A call runs as the agent (channel `mcp`) through the
 * dispatcher: the API's authorization, validation, tenancy and errors, never more than the agent's
 * own authority. call_tool reaches only tools the agent may call. The same list binds the agent's
 * keys on /mcp (the gateway's MCP front narrows their view to it: views.ts, withAllowList).
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

/**
 * Whether `name` matches `pattern`, where `*` stands for any run of characters (none included) and
 * every other character for itself. Greedy, going back only to the last `*`: at most about
 * name × pattern steps, whatever the pattern. (As a backtracking RegExp, `^.*.*…z$` with a dozen
 * stars took 12 s against one tool name.)
 */
export function wildcardMatch(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    if (pattern[p] === '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.length && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Whether an agent with these tool patterns (null: the default set) may call `name`. */
export const toolAllowed = (patterns: string[] | null, name: string): boolean => (patterns ?? DEFAULT_TOOLS).some((p) => wildcardMatch(p, name));
