/**
 * What one client sees of the catalogue (docs/mcp.md, "The surface"): the default set, toolsets
 * chosen on the URL (`/mcp?toolsets=drive,threads`) or in `X-MCP-Toolsets`, and read-only mode
 * (`?readonly=true` or `X-MCP-Readonly: true`). search_tools and call_tool are in every view, and
 * reach every tool the view allows.
 */
import { DomainError } from '@svc/kit';

import { InvalidCursorError, type ToolDef } from './catalogue.js';
import { WRITTEN } from './descriptions.js';
import { CALL_TOOL, SEARCH_TOOLS } from './names.js';

/**
 * The default set: the spec's named tools, the ones a conversation with an agent, a drive and a
 * site need to be usable on their own (reading a thread's messages, waiting for a reply, finding,
 * making a folder, deleting a file, a price), and search_tools and call_tool for the rest. Each has
 * a written description (descriptions.ts).
 */
export const DEFAULT_TOOLSET: readonly string[] = Object.freeze([SEARCH_TOOLS, CALL_TOOL, ...Object.keys(WRITTEN)]);

/** How a client chose to see the catalogue. */
export interface ToolView {
  /** Areas (and `default`) listed; `all` for every tool. Sorted. */
  toolsets: readonly string[];
  /** Only tools that change nothing are listed, found and called. */
  readOnly: boolean;
  /** An agent's allow-list (its `tools` patterns): only the tools it names, listed and called. */
  allowed?: (name: string) => boolean;
  /** Why `allowed` refuses a tool, in a sentence naming the list that does (the agent's, a token's scopes). */
  refusal?: (name: string) => string;
  /** Identifies the view for caching its pages and binding its cursors (`allowed` adds `agent`). */
  key: string;
}

export const DEFAULT_VIEW: ToolView = Object.freeze({ toolsets: ['default'], readOnly: false, key: 'default' });

/** Every tool, for a caller whose front chooses no view (the API, a thread's run): what the rules allow. */
export const EVERY_TOOL_VIEW: ToolView = Object.freeze({ toolsets: ['all'], readOnly: false, key: 'all' });

const invalidView = (message: string) => new DomainError('invalid_argument', 'invalid_toolsets', message);

/**
 * The view a request asks for: the `toolsets` and `readonly` query parameters, else the
 * `x-mcp-toolsets` and `x-mcp-readonly` headers. An unknown toolset or a bad flag is a 400
 * (invalid_toolsets), before any MCP processing.
 */
export function viewOf(areas: readonly string[], query: URLSearchParams, header: (name: string) => string | undefined): ToolView {
  const sets = query.get('toolsets') ?? header('x-mcp-toolsets');
  const ro = query.get('readonly') ?? header('x-mcp-readonly');
  let toolsets = ['default'];
  if (sets !== null && sets !== undefined && sets.trim() !== '') {
    const names = [...new Set(sets.split(',').map((s) => s.trim().toLowerCase()))].filter(Boolean);
    const known = new Set(['default', 'all', ...areas]);
    const unknown = names.filter((n) => !known.has(n));
    if (unknown.length) throw invalidView(`Unknown toolset ${unknown.join(', ')}: the toolsets are default, all, ${areas.join(', ')}.`);
    toolsets = names.includes('all') ? ['all'] : names.sort();
  }
  let readOnly = false;
  if (ro !== null && ro !== undefined) {
    const v = ro.trim().toLowerCase();
    if (v === 'true' || v === '1') readOnly = true;
    else if (v !== 'false' && v !== '0' && v !== '') throw invalidView('readonly: must be true or false.');
  }
  return { toolsets, readOnly, key: `${toolsets.join(',')}${readOnly ? '+ro' : ''}` };
}

/**
 * The view narrowed to an allow-list (an agent's tools, an OAuth token's toolsets): only the tools
 * it names are listed and called. A view already narrowed keeps its list too (both must allow).
 */
export function withAllowList(
  view: ToolView,
  allowed: (name: string) => boolean,
  listKey: string,
  refusal: (name: string) => string = (name) => `This agent's tool list does not include ${name}.`,
): ToolView {
  const before = view.allowed;
  const beforeRefusal = view.refusal;
  return {
    ...view,
    allowed: before ? (name) => before(name) && allowed(name) : allowed,
    refusal: (name) => (before && !before(name) && beforeRefusal ? beforeRefusal(name) : refusal(name)),
    key: `${view.key}+agent:${listKey}`,
  };
}

/**
 * Whether a view lets a tool be called (and found): read-only mode keeps tools marked read-only
 * (search_tools and call_tool always: call_tool applies the view to the tool it calls); an agent's
 * list keeps what it names.
 */
export function allows(view: ToolView, t: ToolDef): boolean {
  const meta = t.name === SEARCH_TOOLS || t.name === CALL_TOOL;
  if (view.allowed && !meta && !view.allowed(t.name)) return false;
  return meta || !view.readOnly || t.annotations.readOnlyHint;
}

/** Whether a view lists a tool: its toolsets (the meta tools in every one), and what it allows. */
export function lists(view: ToolView, t: ToolDef): boolean {
  if (!allows(view, t)) return false;
  if (t.name === SEARCH_TOOLS || t.name === CALL_TOOL || view.toolsets.includes('all')) return true;
  return (view.toolsets.includes('default') && DEFAULT_TOOLSET.includes(t.name)) || view.toolsets.includes(t.area);
}

/** A cursor: the view's key and the offset of the page it starts, as this server hands them out. */
const cursorOf = (view: ToolView, offset: number) => Buffer.from(`${view.key}|${offset}`).toString('base64url');

/**
 * One page of the tools a view lists: `size` from the cursor, and the next page's cursor (none on
 * the last). A cursor this server would not have handed out for this view (another view's, an
 * offset that no page starts at, anything made up) is an InvalidCursorError.
 */
export function viewPage(
  tools: readonly ToolDef[],
  view: ToolView,
  cursor: string | undefined,
  size: number,
): { tools: ToolDef[]; nextCursor?: string } {
  let start = 0;
  if (cursor !== undefined) {
    const m = /^(.*)\|(\d{1,6})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
    start = m && m[1] === view.key ? Number(m[2]) : -1;
    if (start <= 0 || start % size !== 0 || start >= tools.length || cursorOf(view, start) !== cursor) throw new InvalidCursorError();
  }
  const end = start + size;
  return { tools: tools.slice(start, end), nextCursor: end < tools.length ? cursorOf(view, end) : undefined };
}
