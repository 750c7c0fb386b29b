import { effectOf, isIdempotent, type Route } from '@svc/api';

import { WRITTEN } from './descriptions.js';
import { CALL_TOOL, SEARCH_TOOLS, toolName } from './names.js';
import { portableSchema } from './portable.js';
import { type ArgumentMap, inputSchemaOf, type JsonSchema, outputSchemaOf } from './schemas.js';
import { ToolIndex } from './search-index.js';

export type { JsonSchema } from './schemas.js';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** One tool as clients see it (MCP's Tool, plus the operation it is). */
export interface ToolDef {
  name: string;
  title: string;
  description: string;
  /** The operation it calls; empty for search_tools and call_tool, which are not operations. */
  routeId: string;
  /** The area it belongs to (the operation's tag; `tools` for search_tools and call_tool). */
  area: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations: ToolAnnotations;
}

/** What a tool needs to call its operation (kept beside the public definition). */
export interface ToolBinding {
  def: ToolDef;
  route: Route;
  args: ArgumentMap;
  /** The answer is not an object: it is carried as `{ result }`. */
  wrapped: boolean;
}

export interface SearchFilters {
  area?: string;
  readOnly?: boolean;
  destructive?: boolean;
  openWorld?: boolean;
  /** At most this many (default all). */
  limit?: number;
  /** Only tools this passes (the caller's view: read-only mode, an agent's tool list). */
  only?: (t: ToolDef) => boolean;
}

/**
 * Which operations are tools: those a caller with a key uses (not the gateway's keyless health and
 * OpenAPI answers), that a person or an agent may call, that change no authority (grants, members,
 * hosts' pairing, settings, signing keys, provider keys, agents' limits: a person does those
 * through the API, never through a tool), that are no person's own decision (personOnly: approving
 * an agent's tool call), and that are served.
 */
export function isToolOperation(r: Route): boolean {
  return (
    r.auth === 'key' &&
    !r.internal &&
    !r.authority &&
    !r.personOnly &&
    (r.principals.includes('human') || r.principals.includes('agent')) &&
    r.handler.kind !== 'unimplemented'
  );
}

/** Annotations from the operation's declared effect (route.ts, Route.effect). */
export function annotationsOf(r: Route): ToolAnnotations {
  const effect = effectOf(r);
  return {
    readOnlyHint: effect === 'reads',
    destructiveHint: effect === 'deletes' || effect === 'overwrites',
    idempotentHint: isIdempotent(r),
    openWorldHint: r.outside === true,
  };
}

const titleOf = (name: string) => {
  const words = name.split('_').join(' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/**
 * A route's summary as a tool's description: without the sentence on `Accept: text/event-stream`,
 * which a tool call cannot send (it answers the list; the live stream is the HTTP API's).
 */
export const toolSummary = (summary: string): string => summary.replace(/ With Accept: text\/event-stream, [^.]*\./, '');

function bindingOf(r: Route): ToolBinding {
  const name = toolName(r);
  const input = inputSchemaOf(r);
  const output = outputSchemaOf(r);
  const written = WRITTEN[name];
  const def: ToolDef = {
    name,
    title: written?.title ?? titleOf(name),
    // The route's summary (a test holds every one to a sentence a model can act on; the route is in routeId).
    description: written?.description ?? toolSummary(r.summary),
    routeId: r.id,
    area: r.tag,
    // In the spelling narrower clients accept (no type arrays): the same values (portable.ts).
    inputSchema: portableSchema(input.schema),
    outputSchema: output.schema && portableSchema(output.schema),
    annotations: annotationsOf(r),
  };
  return { def, route: r, args: input.map, wrapped: output.wrapped };
}

/** The search weight of the everyday tools (those with written descriptions) over the rest. */
const EVERYDAY_PRIOR = 1.2;

const META_ANNOTATIONS: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

function metaTools(areas: string[]): ToolDef[] {
  return [
    {
      name: SEARCH_TOOLS,
      title: 'Search tools',
      description:
        'Find tools by what they do: ranked by the query’s words over each tool’s name, title and description, ' +
        'filtered by area and annotations. Each result carries its input schema, so it can be called at once (or through call_tool).',
      routeId: '',
      area: 'tools',
      inputSchema: {
        type: 'object',
        properties: {
          query: { type: 'string', maxLength: 500, description: 'Words describing the tool wanted (empty: every tool that passes the filters).' },
          area: { type: 'string', enum: areas, description: 'Only tools of this area.' },
          readOnly: { type: 'boolean', description: 'Only tools that change nothing (true) or only tools that do (false).' },
          destructive: { type: 'boolean', description: 'Only tools that delete or overwrite (true), or only those that do not (false).' },
          openWorld: {
            type: 'boolean',
            description: 'Only tools that reach outside the platform (trading venues, hosts), or only those that do not.',
          },
          limit: { type: 'integer', minimum: 1, maximum: 100, default: 10, description: 'At most this many results (default 10).' },
        },
        additionalProperties: false,
      },
      outputSchema: {
        type: 'object',
        properties: {
          tools: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                name: { type: 'string' },
                title: { type: 'string' },
                description: { type: 'string' },
                area: { type: 'string' },
                annotations: { type: 'object' },
                inputSchema: { type: 'object' },
                signature: { type: 'string', description: 'The tool as a run_code script calls it: svc.tools.<signature> (TypeScript-like).' },
              },
              required: ['name', 'title', 'description', 'area', 'annotations', 'inputSchema', 'signature'],
            },
          },
          total: { type: 'integer', description: 'How many tools matched (more than returned when over the limit).' },
        },
        required: ['tools', 'total'],
      },
      annotations: META_ANNOTATIONS,
    },
    {
      name: CALL_TOOL,
      title: 'Call tool',
      description:
        'Call any tool of this server by name with its arguments (for a tool found with search_tools that is not on the page of tools/list the client read). ' +
        'The result is that tool’s result.',
      routeId: '',
      area: 'tools',
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', maxLength: 200, description: 'The tool’s name.' },
          arguments: { type: 'object', description: 'The tool’s arguments, as its input schema says.' },
        },
        required: ['name'],
        additionalProperties: false,
      },
      // Whatever the called tool answers: neither read-only nor safe to repeat in general.
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
  ];
}

export class InvalidCursorError extends Error {
  constructor() {
    super('The cursor is not one this server handed out.');
  }
}

/**
 * The tools, built once from the route table: one per operation that passes isToolOperation, named
 * by the spec's map or derived from the operation id, with search_tools and call_tool first.
 */
export class ToolCatalogue {
  private readonly bindings = new Map<string, ToolBinding>();
  private readonly tools: ToolDef[];
  private readonly operations: ToolDef[];
  private readonly index: ToolIndex<ToolDef & { prior: number }>;
  readonly areas: string[];

  private constructor(routes: Route[]) {
    for (const r of routes) {
      if (!isToolOperation(r)) continue;
      const b = bindingOf(r);
      const taken = this.bindings.get(b.def.name);
      if (taken) throw new Error(`tools: ${r.id} and ${taken.route.id} would both be the tool ${b.def.name}`);
      this.bindings.set(b.def.name, b);
    }
    const operations = [...this.bindings.values()].map((b) => b.def);
    this.areas = [...new Set(operations.map((d) => d.area))].sort();
    this.tools = [...metaTools(this.areas), ...operations];
    this.operations = operations;
    this.index = new ToolIndex(operations.map((d) => ({ ...d, prior: WRITTEN[d.name] ? EVERYDAY_PRIOR : 1 })));
  }

  static fromRoutes(routes: Route[]): ToolCatalogue {
    return new ToolCatalogue(routes);
  }

  /** Every tool: search_tools and call_tool, then the operations in route-table order. */
  list(): ToolDef[] {
    return this.tools;
  }

  get(name: string): ToolDef | undefined {
    return this.binding(name)?.def ?? this.tools.find((t) => t.name === name && t.routeId === '');
  }

  /** An operation's tool with what calling it needs (undefined for search_tools and call_tool). */
  binding(name: string): ToolBinding | undefined {
    return this.bindings.get(name);
  }

  /**
   * One page of list(): `size` tools from the cursor (an opaque offset a previous page handed out),
   * and the cursor of the next page (undefined on the last). A cursor this catalogue did not hand
   * out is an InvalidCursorError.
   */
  page(cursor: string | undefined, size: number): { tools: ToolDef[]; nextCursor?: string } {
    let start = 0;
    if (cursor !== undefined) {
      const m = /^t(\d{1,6})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
      start = m ? Number(m[1]) : -1;
      if (start <= 0 || start % size !== 0 || start >= this.tools.length || Buffer.from(`t${start}`).toString('base64url') !== cursor)
        throw new InvalidCursorError();
    }
    const end = start + size;
    return { tools: this.tools.slice(start, end), nextCursor: end < this.tools.length ? Buffer.from(`t${end}`).toString('base64url') : undefined };
  }

  /**
   * The operation tools that match, best first: BM25 over name, title, description and parameter
   * names, with stemming and synonyms (search-index.ts); ties keep the catalogue's order. An empty
   * query matches every tool the filters pass.
   */
  search(query: string, filters: SearchFilters = {}): ToolDef[] {
    const passes = (d: ToolDef) =>
      (filters.area === undefined || d.area === filters.area) &&
      (filters.readOnly === undefined || d.annotations.readOnlyHint === filters.readOnly) &&
      (filters.destructive === undefined || d.annotations.destructiveHint === filters.destructive) &&
      (filters.openWorld === undefined || d.annotations.openWorldHint === filters.openWorld) &&
      (filters.only === undefined || filters.only(d));
    let out: ToolDef[];
    if (!query.trim()) out = this.operations.filter(passes);
    else {
      const scores = this.index.scores(query);
      out = [...scores.entries()]
        .filter(([i]) => passes(this.operations[i]!))
        .sort((x, y) => y[1] - x[1] || x[0] - y[0])
        .map(([i]) => this.operations[i]!);
    }
    return filters.limit !== undefined ? out.slice(0, filters.limit) : out;
  }
}
