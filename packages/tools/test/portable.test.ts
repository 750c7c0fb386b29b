import { Ajv2020 } from 'ajv/dist/2020';

import { routes } from '@svc/api';
import { type JsonSchema, portableSchema, ToolCatalogue } from '@svc/tools';

/** Every schema object under `s`, with its path. */
function* schemasIn(s: unknown, at = ''): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(s)) {
    for (const [i, x] of s.entries()) yield* schemasIn(x, `${at}[${i}]`);
  } else if (typeof s === 'object' && s !== null) {
    yield [at, s as Record<string, unknown>];
    for (const [k, x] of Object.entries(s)) yield* schemasIn(x, `${at}.${k}`);
  }
}

describe('portable tool schemas', () => {
  const ajv = new Ajv2020({ strict: false });
  const values = [null, 'a', '', 'toolong-toolong', 3, 3.5, -1, true, [], ['x'], [1], {}, { a: 1 }, { id: 'x' }];

  it.each<[string, JsonSchema]>([
    ['a nullable string with limits', { type: ['string', 'null'], maxLength: 5, description: 'd' }],
    ['a nullable integer with bounds', { type: ['integer', 'null'], minimum: 0, maximum: 10 }],
    ['several types with an enum', { type: ['string', 'number', 'boolean', 'null'], enum: ['a', 3, true, null] }],
    ['a nullable object', { type: ['object', 'null'], properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false }],
    ['a nullable array of nullable strings', { type: ['array', 'null'], items: { type: ['string', 'null'] }, maxItems: 1 }],
    ['a record of anything', { type: 'object', additionalProperties: {} }],
    ['a type array and an anyOf together', { type: ['string', 'null'], anyOf: [{ maxLength: 1 }, { const: null }] }],
  ])('%s: accepts exactly the values the original accepts, with no type array left', (_, schema) => {
    const portable = portableSchema(schema);
    for (const [at, s] of schemasIn(portable)) expect([at, Array.isArray(s.type)]).toEqual([at, false]);
    const before = ajv.compile(schema);
    const after = ajv.compile(portable);
    for (const v of values) expect([v, after(v)]).toEqual([v, before(v)]);
  });

  it('keeps annotations outside the branches', () => {
    expect(portableSchema({ type: ['string', 'null'], description: 'when', format: 'date-time' })).toEqual({
      description: 'when',
      anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }],
    });
  });

  it('the whole catalogue: no type arrays, no empty schema where `true` says the same', () => {
    const catalogue = ToolCatalogue.fromRoutes(routes);
    const found: string[] = [];
    for (const tool of catalogue.list()) {
      for (const [at, s] of schemasIn({ inputSchema: tool.inputSchema, outputSchema: tool.outputSchema })) {
        if (Array.isArray(s.type)) found.push(`${tool.name}${at}: type array`);
        if (s.items === true) found.push(`${tool.name}${at}.items: true`);
        for (const k of ['additionalProperties'] as const) {
          const v = s[k];
          if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0) found.push(`${tool.name}${at}.${k}: {}`);
        }
      }
    }
    expect(found).toEqual([]);
  });
});
