import { IdPool } from '../support/fuzz/pools';
import { hashSeed, Rng } from '../support/fuzz/prng';
import { generate, resolve, type Schema } from '../support/fuzz/values';
import { legacyClient, listAll, type McpTestClient, outcome } from '../support/mcp';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Schemas that match the server (docs/mcp.md, "Schemas"): every tool is called with arguments
 * made from nothing but the inputSchema tools/list gives it, as a model would make them: its
 * required arguments alone; with typical optional ones; and with every number at the maximum the
 * schema allows. A call may fail for what a schema cannot know (an id that names nothing is 404,
 * a folder that is not empty is 409), but never with a 400 that names an argument the call sent:
 * that would be a schema promising what the server refuses (a field not marked required, a limit
 * higher than the server's, a format the server reads otherwise).
 *
 * The only 400s allowed are the rules between arguments that JSON Schema, as the tools spell it,
 * cannot say; each is listed here with its rule, and stays in the tool's description.
 */
const ACROSS_ARGUMENTS: Array<[tool: RegExp, message: RegExp]> = [
  // Exactly one of qty and notional; a notional only for a market order; a trail only for a
  // trailing stop; take-profit and stop-loss legs only for their order class (docs/trading.md).
  [
    /^(trade_order|trading_orders_preview)$/,
    /qty|notional|give either|needs a quantity|only a market order|trail|takeProfit|stopLoss|orderClass|leg/,
  ],
  // A price for limit orders, a stop price for stop orders.
  [/^(trade_order|trading_orders_preview|trading_orders_replace)$/, /price|stopPrice/],
  // A cancel names an order, a client order id, or all.
  [/^trade_cancel$/, /orderId|clientOrderId|all/],
  // A schedule has exactly one timetable (cron, every, at) and one target (threadId or agentId).
  [/^schedules_(create|update|preview)$/, /cron|everySeconds|at|threadId|agentId|one of/],
  // A line range ends at or after its start; a time range starts before its end.
  [/^(drive_replace_lines|drive_read_lines)$/, /at least start/],
  [/^trading_(bars|portfolio_history)$/, /must be before end/],
  // A renamed memory key differs from the old one.
  [/^memory_rename$/, /newKey: must differ from the key/],
  // A token budget leaves room for the output reserved.
  [/^models_truncate_text$/, /give a budget of at least 1 token/],
  // A price is a multiple of its symbol's tick size (the venue's data, not the schema's).
  [/^trading_alerts_(create|update)$/, /multiple of the tick size/],
  // An update changes something.
  [/_(update|rename)$/, /at least one|name or parentId/],
];

let t: TestStack;
let key: string;
let client: McpTestClient;
let tools: Array<Record<string, any>>;
const pool = new IdPool();

async function connect(): Promise<void> {
  const person = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `schema caller ${Date.now()}` })).body;
  key = person.key;
  pool.protected.add(person.account.id);
  client = await legacyClient(t.url, key, { 'x-mcp-toolsets': 'all' });
}

beforeAll(async () => {
  t = await startTestStack();
  await connect();
  tools = (await listAll(client)).tools;
}, 120_000);
afterAll(async () => {
  await client?.close();
  await t?.stop();
});

/** The arguments of one variant: required only, typical, or numbers at their maxima. */
function argumentsOf(tool: Record<string, any>, variant: 'required' | 'typical' | 'maxima'): Record<string, unknown> {
  const schema = tool.inputSchema as Schema;
  const rng = new Rng(hashSeed('schema-calls', tool.name, variant));
  const ctx = { rng, pool, root: schema };
  const args = generate(schema, ctx) as Record<string, unknown>;
  const required = new Set<string>(schema.required ?? []);
  if (variant === 'required') for (const k of Object.keys(args)) if (!required.has(k)) delete args[k];
  if (variant === 'maxima') {
    for (const [k, prop] of Object.entries<Schema>(schema.properties ?? {})) {
      const s = resolve(prop, schema);
      const branch = (s.anyOf as Schema[] | undefined)?.find((b) => b.type === 'integer' || b.type === 'number') ?? s;
      if ((branch.type === 'integer' || branch.type === 'number') && typeof branch.maximum === 'number') args[k] = branch.maximum;
    }
  }
  return args;
}

/** The argument a validation message names (`body.timeoutMs: …`, `query.limit: …`, `if-match: …`), if any. */
function namedArgument(message: string, args: Record<string, unknown>): string | undefined {
  const m = /^(?:(?:body|query|params|headers)\.)?([A-Za-z][\w-]*)/.exec(message);
  if (!m) return undefined;
  const name = m[1]!.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  return name in args ? name : undefined;
}

test('every tool, called with arguments made from its own schema, is never refused for an argument the schema allowed', async () => {
  expect(tools.length).toBeGreaterThan(300);
  const problems: string[] = [];
  let calls = 0;
  for (const tool of tools) {
    for (const variant of ['required', 'typical', 'maxima'] as const) {
      const args = argumentsOf(tool, variant);
      let result: Record<string, any>;
      try {
        result = await client.callTool({ name: tool.name, arguments: args });
      } catch (err) {
        // A generated call that revoked or rotated this caller's own key: a new caller goes on.
        if (/401|unauthorized|invalid_api_key/i.test((err as Error).message)) {
          await connect();
          continue;
        }
        problems.push(`${tool.name} (${variant}): protocol failure ${(err as Error).message}`);
        continue;
      }
      calls++;
      const out = outcome(result);
      pool.harvest(JSON.stringify(out.body));
      if (!out.isError || out.body.error?.code !== 'invalid_request') continue;
      const message = String(out.body.error.message);
      const named = namedArgument(message, args);
      if (!named) continue;
      if (ACROSS_ARGUMENTS.some(([name, rule]) => name.test(tool.name) && rule.test(message))) continue;
      problems.push(`${tool.name} (${variant}) ${JSON.stringify(args).slice(0, 300)} → ${message}`);
    }
  }
  expect(calls).toBeGreaterThan(tools.length * 2);
  expect(problems).toEqual([]);
}, 600_000);

test('the schemas use only the formats JSON Schema defines', () => {
  const STANDARD = new Set([
    'date-time',
    'date',
    'time',
    'duration',
    'email',
    'idn-email',
    'hostname',
    'idn-hostname',
    'ipv4',
    'ipv6',
    'uri',
    'uri-reference',
    'iri',
    'iri-reference',
    'uuid',
    'uri-template',
    'json-pointer',
    'relative-json-pointer',
    'regex',
  ]);
  const odd: string[] = [];
  const walk = (v: unknown, at: string) => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${at}[${i}]`));
    if (typeof v !== 'object' || v === null) return;
    for (const [k, x] of Object.entries(v)) {
      if (k === 'format' && typeof x === 'string' && !STANDARD.has(x)) odd.push(`${at}: ${x}`);
      else walk(x, `${at}.${k}`);
    }
  };
  for (const tool of tools) walk(tool.inputSchema, tool.name);
  expect(odd).toEqual([]);
});
