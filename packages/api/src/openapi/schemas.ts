import { z } from 'zod';

export type Io = 'input' | 'output';
export type JsonSchema = Record<string, unknown>;

/** One form of a named schema, as zod emitted it (its refs still `#/$defs/<name>`). */
interface Form {
  json: JsonSchema;
  /** Its JSON text, to tell equal forms from different ones. */
  text: string;
  /** The named schemas it refers to (in the same form). */
  refs: Set<string>;
}

/** A `$ref` zod emitted, to be pointed at its component once names are decided. */
interface PendingRef {
  node: JsonSchema;
  name: string;
  io: Io;
}

const DEFS_REF = /^#\/\$defs\/(.+)$/;
const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

/**
 * Turns zod schemas into the JSON Schemas of an OpenAPI 3.1 document. Named schemas (`.meta({ id })`)
 * become `components.schemas` entries, each collected once however many operations use it; every
 * `$ref` points there. A schema whose input form (what a request may send: defaults optional,
 * coercions loose) differs from its output form (what an answer holds) gets a second entry,
 * `<id>Input`; a schema only ever sent in requests is named `<id>Input` too.
 *
 * Use: `schema()` for every place a schema appears, then `components()` once; it also fills in the
 * refs of the schemas `schema()` returned.
 */
export class SchemaCollector {
  private readonly named = new Map<string, Partial<Record<Io, Form>>>();
  private readonly pending: PendingRef[] = [];
  private done = false;

  /** The JSON Schema of `t` in form `io`: a `$ref` for a named schema, its named parts collected. */
  schema(t: z.ZodType, io: Io): JsonSchema {
    if (this.done) throw new Error('SchemaCollector: schema() after components()');
    const raw = z.toJSONSchema(t, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const { $schema: _dialect, $defs, ...root } = raw;
    for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) this.add(name, io, def);
    this.track(root, io, new Set());
    return root;
  }

  /** `components.schemas`; points every ref handed out at its entry. */
  components(): Record<string, JsonSchema> {
    this.done = true;
    const shared = this.sharedNames();
    const componentName = (name: string, io: Io) => (io === 'output' || shared.has(name) ? name : `${name}Input`);
    const out: Record<string, JsonSchema> = {};
    for (const [name, forms] of this.named) {
      for (const io of ['output', 'input'] as const) {
        const form = forms[io];
        if (!form || (io === 'input' && shared.has(name))) continue;
        const key = componentName(name, io);
        if (out[key]) throw new Error(`OpenAPI: two schemas would be named ${key}; rename one (.meta({ id }))`);
        out[key] = form.json;
      }
    }
    for (const p of this.pending) p.node.$ref = `#/components/schemas/${componentName(p.name, p.io)}`;
    return out;
  }

  /** Named schemas whose input and output forms are the same, down to every schema they refer to. */
  private sharedNames(): Set<string> {
    const shared = new Set<string>();
    for (const [name, f] of this.named) if (f.input && f.output && f.input.text === f.output.text) shared.add(name);
    // Equal text still differs when a schema it refers to differs; drop those until nothing changes.
    for (let changed = true; changed;) {
      changed = false;
      for (const name of shared) {
        if ([...this.named.get(name)!.output!.refs].some((r) => !shared.has(r))) {
          shared.delete(name);
          changed = true;
        }
      }
    }
    return shared;
  }

  private add(name: string, io: Io, json: JsonSchema): void {
    if (name.startsWith('__schema')) {
      throw new Error('OpenAPI: a recursive schema has no name; give it one with .meta({ id })');
    }
    const forms = this.named.get(name) ?? {};
    this.named.set(name, forms);
    const text = JSON.stringify(json);
    const seen = forms[io];
    if (seen) {
      if (seen.text !== text) throw new Error(`OpenAPI: two different schemas are named ${name} (.meta({ id })); ids must be unique`);
      return;
    }
    const refs = new Set<string>();
    this.track(json, io, refs);
    forms[io] = { json, text, refs };
  }

  /** Records every `$ref` under `node` (they all point into zod's `$defs`), adding their names to `refs`. */
  private track(node: unknown, io: Io, refs: Set<string>): void {
    if (Array.isArray(node)) {
      for (const v of node) this.track(v, io, refs);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const obj = node as JsonSchema;
    if (typeof obj.$ref === 'string') {
      const m = DEFS_REF.exec(obj.$ref);
      if (!m) throw new Error(`OpenAPI: a recursive schema has no name (it refers to ${obj.$ref}); give it one with .meta({ id })`);
      const name = unescapePointer(m[1]!);
      refs.add(name);
      this.pending.push({ node: obj, name, io });
    }
    for (const v of Object.values(obj)) this.track(v, io, refs);
  }
}
