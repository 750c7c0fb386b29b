/**
 * The client: `new Svc()` reads SVC_API_KEY / SVC_BASE_URL / SVC_HOST_CREDENTIAL (options override
 * them) and offers every public operation as a method of its resource tree, generated from the
 * route table: `svc.threads.create({...})`, `svc.drive.list({ parentId })`, `svc.drive.list.all()`,
 * `svc.threads.events.stream({ id })`. Operations that change authority are not part of it.
 */
import { type Config, resolveConfig, type SvcOptions } from './config.js';
import { operations, resources } from './generated/operations.js';
import { streamEvents } from './sse.js';
import { download, prepare, readJson, send } from './transport.js';
import type { CallOptions, Input, Item, OperationId, Output, Resources, ServerEvent, StreamOptions } from './types.js';

type AnyInput = Record<string, unknown>;

// The resource methods are assigned in the constructor, from the generated tree: the interface types them.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging
export interface Svc extends Resources {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class Svc {
  readonly config: Config;
  /** The caller's API keys (`/me/api-keys`): `svc.keys.create`, `list`, `revoke`. */
  readonly keys: Resources['meApiKeys'];

  constructor(options: SvcOptions = {}) {
    this.config = resolveConfig(options);
    Object.assign(this, bind(this, resources));
    this.keys = this.meApiKeys;
  }

  /** Calls operation `id` (a route id) with `input`; the answer's JSON, or a Download for file content. */
  async call<K extends OperationId>(id: K, input?: Input<K>, options: CallOptions = {}): Promise<Output<K>> {
    const prepared = prepare(this.config, id, input as AnyInput);
    const res = await send(this.config, id, prepared, options);
    if (operations[id].answer === 'bytes') return download(res) as Output<K>;
    return (await readJson(res)) as Output<K>;
  }

  /** Every item of a list operation across its pages, following `nextCursor` (or `nextAfter`). */
  async *paginate<K extends OperationId>(id: K, input?: Input<K>, options: CallOptions = {}): AsyncGenerator<Item<K>> {
    const paged = operations[id].paged as { param: string; next: string; items: string } | null;
    if (!paged) throw new TypeError(`svc: ${id} is not a list`);
    let page: AnyInput = { ...(input as AnyInput) };
    for (;;) {
      const answer = (await this.call(id, page as Input<K>, options)) as Record<string, unknown>;
      for (const item of (answer[paged.items] as unknown[]) ?? []) yield item as Item<K>;
      const next = answer[paged.next];
      if (next === null || next === undefined) return;
      page = { ...page, [paged.param]: next };
    }
  }

  /** The live server-sent events of an operation that has them (threads.events), resumed across drops. */
  stream<K extends OperationId>(id: K, input: Input<K>, options: StreamOptions = {}): AsyncGenerator<ServerEvent<Item<K>>> {
    if (!operations[id].events) throw new TypeError(`svc: ${id} has no event stream`);
    return streamEvents(this.config, id, input as AnyInput, options) as AsyncGenerator<ServerEvent<Item<K>>>;
  }
}

/** The resource tree with each route id replaced by its method. */
function bind(client: Svc, tree: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, node] of Object.entries(tree)) {
    if (typeof node !== 'string') {
      out[name] = bind(client, node as object);
      continue;
    }
    const id = node as OperationId;
    const method = (input?: AnyInput, options?: CallOptions) => client.call(id, input as never, options);
    if (operations[id].paged)
      Object.assign(method, { all: (input?: AnyInput, options?: CallOptions) => client.paginate(id, input as never, options) });
    if (operations[id].events)
      Object.assign(method, { stream: (input: AnyInput, options?: StreamOptions) => client.stream(id, input as never, options) });
    out[name] = method;
  }
  return out;
}
