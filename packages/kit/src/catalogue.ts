/**
 * The service catalogue: every component of the platform, once. What can derive from it does
 * (SERVICE_NAMES and ServiceName, SVC_SERVICE's values, the SVC_<NAME>_ADDR variables, the
 * gateway's readiness list, the typed clients of @svc/clients, @svc/api's rpc types, the call
 * check of the Registry); what cannot (the stack's MODULES, tsconfig references, the chart's
 * component lists, the image smoke script's lists) is held to it by test/platform/catalogue.test.ts.
 *
 * `calls` declares the service call graph: the services a service may call over gRPC. It is a
 * DAG — services call "down" (agents → accounts → keys); the edge components (the gateway, mcp)
 * may call any gRPC service (`'*'`) and nobody calls them over gRPC. The Registry a service gets
 * refuses a client of a service it has not declared.
 */
export interface CatalogueEntry {
  /** Full gRPC service name (`svc.<name>.v1.<Name>Service`), also its health-check name; null: no gRPC server. */
  readonly grpc: string | null;
  /** The services this one calls over gRPC (downstream edges), or `'*'`: any gRPC service. */
  readonly calls: readonly string[] | '*';
  /** One line: what it owns. */
  readonly summary: string;
  /** The folder (services/<home>) that holds its code, when it is not named as the service is. */
  readonly home?: string;
}

/** In start order: a service after the services it calls (the stack starts them so). */
export const CATALOGUE = {
  gateway: { grpc: null, calls: '*', summary: 'HTTP edge: authentication, the route table, local handlers' },
  keys: { grpc: 'svc.keys.v1.KeysService', calls: [], summary: 'API keys and their verification' },
  accounts: { grpc: 'svc.accounts.v1.AccountsService', calls: ['keys'], summary: 'accounts, organizations, grants, signing keys, hosts, audit' },
  drive: { grpc: 'svc.drive.v1.DriveService', calls: [], summary: 'the file drive' },
  // One gRPC service per area (Agents, Threads, Approvals, Memory, Tasks, Schedules) of svc.agents.v1 on one server; AgentsService names it.
  agents: {
    grpc: 'svc.agents.v1.AgentsService',
    calls: ['accounts', 'keys'],
    summary: 'agents and their keys, threads and runs, approvals, memory, tasks, schedules',
  },
  models: { grpc: 'svc.models.v1.ModelsService', calls: ['accounts'], summary: 'the model catalogue, provider keys, credits, inference' },
  trading: { grpc: 'svc.trading.v1.TradingService', calls: ['agents'], summary: "venues, orders, fills, paper books, agents' trading limits" },
  profiles: { grpc: 'svc.profiles.v1.ProfilesService', calls: [], summary: 'taste profiles' },
  // Deployed as `mcp` (SVC_SERVICE, SVC_MCP_ADDR, the chart) since before the MCP endpoint moved to the
  // gateway; its code is the sandbox's (services/sandbox).
  mcp: { grpc: 'svc.mcp.v1.McpService', calls: '*', home: 'sandbox', summary: 'the code sandbox: run_code in killable QuickJS processes' },
  runtime: {
    grpc: null,
    calls: '*',
    summary: "the agents service's run workers: runs from the work queue, models through Infer, tools through the dispatcher",
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ServiceName = keyof typeof CATALOGUE;
/** The components that serve gRPC (every one but the gateway). */
export type GrpcServiceName = { [K in ServiceName]: (typeof CATALOGUE)[K]['grpc'] extends string ? K : never }[ServiceName];

export const SERVICE_NAMES = Object.keys(CATALOGUE) as ServiceName[] & readonly [ServiceName, ...ServiceName[]];
export const GRPC_SERVICE_NAMES = SERVICE_NAMES.filter((n): n is GrpcServiceName => CATALOGUE[n].grpc !== null);

/** The folder under services/ that holds a component's code. */
export function homeOf(name: ServiceName): string {
  return (CATALOGUE[name] as CatalogueEntry).home ?? name;
}

/** The full gRPC service name of a component. */
export function grpcServiceName(name: GrpcServiceName): string {
  return CATALOGUE[name].grpc;
}

/** The services `caller` may call: its declared downstreams, every gRPC service but itself for `'*'`. */
export function downstreamOf(caller: ServiceName): GrpcServiceName[] {
  const calls = CATALOGUE[caller].calls as readonly string[] | '*';
  if (calls === '*') return GRPC_SERVICE_NAMES.filter((n) => n !== caller);
  return GRPC_SERVICE_NAMES.filter((n) => calls.includes(n));
}

export function mayCall(caller: ServiceName, callee: ServiceName): boolean {
  return (downstreamOf(caller) as ServiceName[]).includes(callee);
}

/**
 * A cycle in the declared call graph, as the path that closes it (`['a', 'b', 'a']`), or null.
 * `'*'` callers are edges too: a service that calls the gateway or mcp back closes a cycle.
 */
export function findCallCycle(graph: Record<string, readonly string[]> = callGraph()): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === 'done') return null;
    if (state.get(n) === 'open') return [...path.slice(path.indexOf(n)), n];
    state.set(n, 'open');
    path.push(n);
    for (const m of graph[n] ?? []) {
      const cycle = visit(m);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(n, 'done');
    return null;
  };
  for (const n of Object.keys(graph)) {
    const cycle = visit(n);
    if (cycle) return cycle;
  }
  return null;
}

/** The declared call graph with `'*'` expanded: service → the services it may call. */
export function callGraph(): Record<ServiceName, GrpcServiceName[]> {
  return Object.fromEntries(SERVICE_NAMES.map((n) => [n, downstreamOf(n)])) as Record<ServiceName, GrpcServiceName[]>;
}
