import type { ToolSpec } from '../tool-spec.js';

type Props = Record<string, object>;
export const obj = (properties: Props, required: string[] = []): ToolSpec['inputSchema'] => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  additionalProperties: false,
});
export const id = (what: string) => ({ type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$', description: what });
export const filePath = {
  type: 'string',
  minLength: 1,
  maxLength: 1024,
  description: 'A path relative to the project folder, e.g. "docs/setup.md" (no "..", not absolute).',
};
const version = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description: 'The version read (get_world / read_file); the save is refused if the document changed since.',
};

export const spec = (
  s: Omit<ToolSpec, 'acts' | 'readOnly' | 'group'> & Partial<Pick<ToolSpec, 'acts' | 'readOnly'>>,
  group: ToolSpec['group'],
): ToolSpec => ({
  readOnly: true,
  acts: false,
  group,
  ...s,
});

/** The project, world and device tools (verb project.read; save_world project.write). */
export const PROJECT_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'get_project',
      title: 'Get the project',
      description: 'The project folder this host serves: its name, description, and how many worlds, devices and files it has.',
      verb: 'project.read',
      inputSchema: obj({}),
    },
    'project',
  ),
  spec(
    {
      name: 'project_status',
      title: 'Project status',
      description: 'Whether each world and devices.json are valid (with the problems of those that are not), and the size of the project index.',
      verb: 'project.read',
      inputSchema: obj({}),
    },
    'project',
  ),
  spec(
    {
      name: 'list_worlds',
      title: 'List worlds',
      description: 'The worlds of the project (worlds/<id>.json): id, name, version, counts of devices and parameters.',
      verb: 'project.read',
      inputSchema: obj({}),
    },
    'project',
  ),
  spec(
    {
      name: 'get_world',
      title: 'Get a world',
      description: 'A world document (schema svc.world/1: units, devices, parameters, simulation) and its version, which save_world takes back.',
      verb: 'project.read',
      inputSchema: obj({ world: id('The world id (its file name without .json).') }, ['world']),
    },
    'project',
  ),
  spec(
    {
      name: 'save_world',
      title: 'Save a world',
      description:
        'Validates a world document and writes it atomically. Give the version get_world returned to replace a world (a stale version is a version_conflict error); give none to create one.',
      verb: 'project.write',
      readOnly: false,
      acts: true,
      inputSchema: obj(
        {
          world: id('The world id (its file name without .json).'),
          document: {
            type: 'object',
            description: 'The world: {schema: "svc.world/1", name, units: {length, time}, devices: [...], parameters: {...}, simulation?: {outputs}}',
          },
          version,
        },
        ['world', 'document'],
      ),
    },
    'project',
  ),
  spec(
    {
      name: 'list_devices',
      title: 'List devices',
      description: 'The devices the project describes (devices.json): id, kind, the host unit driving it, parameters.',
      verb: 'project.read',
      inputSchema: obj({}),
    },
    'project',
  ),
  spec(
    {
      name: 'get_device',
      title: 'Get a device',
      description: 'One device of devices.json and the worlds that place it.',
      verb: 'project.read',
      inputSchema: obj({ device: id('The device id.') }, ['device']),
    },
    'project',
  ),
];

/** The file tools: read_file and the graph (files.read), write_file (files.write). */
export const FILE_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'read_file',
      title: 'Read a file',
      description:
        'A file of the project (at most 512 KiB), with its version. Paths stay inside the project: no "..", no absolute path, no symlink out.',
      verb: 'files.read',
      inputSchema: obj({ path: filePath, encoding: { type: 'string', enum: ['utf8', 'base64'], description: 'Default utf8.' } }, ['path']),
    },
    'files',
  ),
  spec(
    {
      name: 'write_file',
      title: 'Write a file',
      description: 'Writes a file of the project atomically (created with its folders when missing). With version, only if the file is still at it.',
      verb: 'files.write',
      readOnly: false,
      acts: true,
      inputSchema: obj(
        { path: filePath, content: { type: 'string', maxLength: 700_000 }, encoding: { type: 'string', enum: ['utf8', 'base64'] }, version },
        ['path', 'content'],
      ),
    },
    'files',
  ),
  spec(
    {
      name: 'graph_query',
      title: 'Query the project graph',
      description:
        'The links of the project: with a path, its links out (imports, markdown links, @ref mentions, devices a world places), the files linking to it, and what it reaches within depth; without one, every file with its link counts and the broken links. A device is "device:<id>".',
      verb: 'files.read',
      inputSchema: obj({
        path: { type: 'string', minLength: 1, maxLength: 1024 },
        depth: { type: 'integer', minimum: 1, maximum: 10 },
        kind: { type: 'string', maxLength: 32, description: 'Without path: only files of this kind (code, markdown, world, devices, json, ...).' },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
      }),
    },
    'files',
  ),
  spec(
    {
      name: 'graph_search',
      title: 'Search the project',
      description:
        'Full-text search of the project: files containing every word (a word also matches longer words it begins), best first, with matching lines.',
      verb: 'files.read',
      inputSchema: obj({ query: { type: 'string', minLength: 1, maxLength: 500 }, limit: { type: 'integer', minimum: 1, maximum: 100 } }, ['query']),
    },
    'files',
  ),
];

/** Code and simulation. */
export const COMPUTE_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'evaluate_code',
      title: 'Evaluate code',
      description:
        'Runs JavaScript in a QuickJS sandbox in a killable child process (no network, no filesystem, time/memory/output limits). `input` is given to the code as the constant `input`; the value of the last expression (or `return`, or `export default`) is the result.',
      verb: 'code.run',
      inputSchema: obj(
        {
          code: { type: 'string', minLength: 1, maxLength: 200_000 },
          input: { type: 'object', description: 'JSON made available to the code as `input`.' },
          timeoutMs: { type: 'integer', minimum: 1, maximum: 30_000 },
          memoryLimitMb: { type: 'integer', minimum: 16, maximum: 256 },
        },
        ['code'],
      ),
    },
    'compute',
  ),
  spec(
    {
      name: 'sim_trials',
      title: 'Run simulation trials',
      description:
        "Runs N seeded trials of a world's simulation (each trial draws the world's parameters from their distributions with a mulberry32 PRNG, then evaluates simulation.outputs) and returns per output mean, stddev, min, max and percentiles. The same seed gives identical results.",
      verb: 'sim.run',
      inputSchema: obj(
        {
          world: id('The world id.'),
          trials: { type: 'integer', minimum: 1, maximum: 1_000_000 },
          seed: { type: 'integer', minimum: 0, maximum: 4294967295 },
          outputs: { type: 'array', items: { type: 'string' }, maxItems: 50, description: 'Outputs to compute (default all).' },
          overrides: { type: 'object', description: 'Parameter id → a fixed number for this run.' },
          percentiles: {
            type: 'array',
            items: { type: 'number', minimum: 0, maximum: 100 },
            maxItems: 20,
            description: 'Default [5, 25, 50, 75, 95].',
          },
        },
        ['world', 'trials', 'seed'],
      ),
    },
    'compute',
  ),
];

const venue = { type: 'string', minLength: 1, maxLength: 64, description: 'The venue (default "paper").' };

/** Markets and other hosts, through the platform API. */
export const PLATFORM_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'market_venues',
      title: 'Market venues',
      description: 'The trading venues of the platform (paper and live), with capabilities and instruments.',
      verb: 'market.read',
      inputSchema: obj({}),
    },
    'platform',
  ),
  spec(
    {
      name: 'market_account',
      title: 'Market account',
      description: 'Balances, positions and open orders at a venue (paper by default).',
      verb: 'market.read',
      inputSchema: obj({ venue }),
    },
    'platform',
  ),
  spec(
    {
      name: 'market_order',
      title: 'Place an order',
      description: 'Places an order through the platform (paper by default). Journaled before it is sent.',
      verb: 'market.trade',
      readOnly: false,
      acts: true,
      inputSchema: obj(
        {
          venue,
          symbol: { type: 'string', minLength: 1, maxLength: 32 },
          side: { type: 'string', enum: ['buy', 'sell'] },
          type: { type: 'string', enum: ['market', 'limit', 'stop', 'stop_limit'] },
          qty: { type: 'string', minLength: 1, maxLength: 40, description: 'A decimal string.' },
          price: { type: 'string', maxLength: 40 },
          stopPrice: { type: 'string', maxLength: 40 },
          timeInForce: { type: 'string', enum: ['day', 'gtc', 'ioc', 'fok'] },
          clientOrderId: { type: 'string', maxLength: 64 },
        },
        ['symbol', 'side', 'type', 'qty'],
      ),
    },
    'platform',
  ),
  spec(
    {
      name: 'market_cancel',
      title: 'Cancel orders',
      description: 'Cancels one open order (orderId, or clientOrderId at a venue) or all open orders at a venue. Journaled before it is sent.',
      verb: 'market.trade',
      readOnly: false,
      acts: true,
      inputSchema: obj({
        venue,
        orderId: { type: 'string', maxLength: 64 },
        clientOrderId: { type: 'string', maxLength: 64 },
        all: { type: 'boolean' },
      }),
    },
    'platform',
  ),
  spec(
    {
      name: 'list_hosts',
      title: 'List hosts',
      description: "The hosts of this host's account (through the platform).",
      verb: 'peers.list',
      inputSchema: obj({}),
    },
    'platform',
  ),
  spec(
    {
      name: 'host_call',
      title: 'Call another host',
      description: 'Calls a tool on another host of the account through the platform (POST /hosts/:hostId/call). Journaled before it is sent.',
      verb: 'peers.call',
      readOnly: false,
      acts: true,
      inputSchema: obj(
        {
          hostId: { type: 'string', minLength: 1, maxLength: 64 },
          tool: { type: 'string', minLength: 1, maxLength: 64 },
          arguments: { type: 'object' },
        },
        ['hostId', 'tool'],
      ),
    },
    'platform',
  ),
];
