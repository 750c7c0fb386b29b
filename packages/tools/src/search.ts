import { DomainError } from '@svc/kit';

import type { SearchFilters, ToolCatalogue } from './catalogue.js';
import { signatureOf } from './declarations.js';
import { allows, type ToolView } from './views.js';

const invalid = (message: string) => new DomainError('invalid_argument', 'invalid_request', message);

const optionalBoolean = (args: Record<string, unknown>, key: string): boolean | undefined => {
  const v = args[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw invalid(`arguments.${key}: must be true or false.`);
  return v;
};

/** search_tools: its arguments checked, the catalogue searched, each match with its input schema. */
export function searchTools(catalogue: ToolCatalogue, args: Record<string, unknown>, view?: ToolView): Record<string, unknown> {
  const known = new Set(['query', 'area', 'readOnly', 'destructive', 'openWorld', 'limit']);
  for (const key of Object.keys(args)) if (!known.has(key)) throw invalid(`arguments.${key}: search_tools takes no such argument.`);
  const query = args.query ?? '';
  if (typeof query !== 'string' || query.length > 500) throw invalid('arguments.query: must be a string of at most 500 characters.');
  const filters: SearchFilters = {
    readOnly: optionalBoolean(args, 'readOnly'),
    destructive: optionalBoolean(args, 'destructive'),
    openWorld: optionalBoolean(args, 'openWorld'),
    // Only what the caller's view allows (read-only mode, an agent's tool list).
    ...(view ? { only: (t) => allows(view, t) } : {}),
  };
  if (args.area !== undefined) {
    if (typeof args.area !== 'string' || !catalogue.areas.includes(args.area)) {
      throw invalid(`arguments.area: must be one of ${catalogue.areas.join(', ')}.`);
    }
    filters.area = args.area;
  }
  const limit = args.limit ?? 10;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalid('arguments.limit: must be an integer from 1 to 100.');
  const found = catalogue.search(query, filters);
  return {
    tools: found.slice(0, limit).map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      area: t.area,
      annotations: t.annotations,
      inputSchema: t.inputSchema,
      // Its helper in a run_code script (code mode): svc.tools.<signature>.
      signature: signatureOf(t),
    })),
    total: found.length,
  };
}
