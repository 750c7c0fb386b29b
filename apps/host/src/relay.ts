import fs from 'node:fs';
import http from 'node:http';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { type HostConfig, loadUnits } from './config.js';
import { checkArgs, ControlError } from './control.js';
import { endpointFile, journalFile } from './host.js';
import { readJournal } from './journal.js';
import type { Log } from './log.js';
import { LOCAL_READS, LocalReads, whyCredential } from './relay-local.js';
import { TOOL_BY_NAME, TOOLS, type ToolSpec } from './tools.js';

const VERSION = '0.1.0';

export interface RelayOptions {
  config: HostConfig;
  /** The host credential; without it the relay is read-only. */
  credential?: string;
  log: Log;
  /** Whether SVC_HOST_PORT was given (else the running host's endpoint file says where it listens). */
  portGiven?: boolean;
}

const text = (s: string) => [{ type: 'text' as const, text: s }];
const ok = (result: unknown): CallToolResult => ({
  content: text(JSON.stringify(result)),
  structuredContent: (typeof result === 'object' && result !== null && !Array.isArray(result) ? result : { value: result }) as Record<
    string,
    unknown
  >,
});
const fail = (code: string, message: string): CallToolResult => ({
  isError: true,
  content: text(message),
  structuredContent: { error: { code, message } },
});

/** The port of the running host's endpoint: SVC_HOST_PORT when given, else the endpoint file the host wrote. */
function endpointPort(o: RelayOptions): number {
  if (o.portGiven) return o.config.port;
  try {
    const { port } = JSON.parse(fs.readFileSync(endpointFile(o.config.dataDir), 'utf8')) as { port?: unknown };
    if (Number.isInteger(port)) return port as number;
  } catch {
    // No running host wrote one: the default port.
  }
  return o.config.port;
}

/** One call to the local endpoint, over loopback, with the credential. */
/** What the local endpoint answers: the tool's result, or the error. */
interface ControlAnswer {
  result?: unknown;
  error?: { code: string; message: string };
}

function post(port: number, credential: string, tool: string, args: unknown): Promise<{ status: number; body: ControlAnswer }> {
  const body = JSON.stringify(args ?? {});
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/control/${tool}`,
        agent: keepAlive,
        headers: {
          host: `127.0.0.1:${port}`,
          authorization: `Bearer ${credential}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as ControlAnswer });
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('the host did not answer within 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });

const HOW = 'set SVC_HOST_CREDENTIAL, or SVC_HOST_CREDENTIAL_FILE naming a file only you can read (chmod 600), and start the relay again';

/**
 * Serves a tool without a credential: what reads and shows (the project, worlds, devices, files,
 * the graph and search, the workbench's panes; the units file and the journal) is served here
 * from local files; everything else says why it needs the credential and how to give it.
 */
async function readOnly(o: RelayOptions, local: LocalReads, spec: ToolSpec, args: unknown): Promise<CallToolResult> {
  if (!spec.readOnly && !LOCAL_READS.has(spec.name)) {
    return fail(
      'read_only',
      `This relay has no host credential, so it is read-only: ${spec.name} ${whyCredential(spec)} and needs the credential (${HOW}).`,
    );
  }
  const a = checkArgs(spec, args ?? {});
  if (LOCAL_READS.has(spec.name)) return ok(await local.run(spec, a));
  if (spec.name === 'read_journal') {
    return ok(await readJournal(journalFile(o.config.dataDir), { after: a.after as number | undefined, limit: a.limit as number | undefined }));
  }
  if (spec.name === 'list_units') {
    const units = [...loadUnits(o.config.unitsFile)].map(([name, d]) => ({ name, driver: d.kind, live: false }));
    return ok({ units, note: 'From the units file: without the host credential the relay cannot ask the running host for live state.' });
  }
  return fail('credential_required', `${spec.name} ${whyCredential(spec)}, which needs the host credential (${HOW}).`);
}

/** The MCP server: the control tools, each relayed to the host's local endpoint. */
export function createRelayServer(o: RelayOptions): Server {
  const local = new LocalReads(o.config.project);
  const server = new Server(
    { name: 'svc-host', version: VERSION },
    {
      capabilities: { tools: {} },
      instructions: o.credential
        ? 'Controls the units (devices) of this machine through the svc local host. Every action needs a standing grant the host holds and is journaled before it reaches the unit.'
        : 'Read-only: this relay has no host credential. It reads and shows from this machine: the project, worlds, devices, files, the graph and search, workbench panes (open_file, show_world), the units file and the journal. Tools that act answer an error saying how to give the credential.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description + (t.verb && t.verb !== 'any' ? ` Needs the grant verb ${t.verb}.` : ''),
      inputSchema: t.inputSchema,
      annotations: {
        title: t.title,
        readOnlyHint: t.readOnly,
        destructiveHint: t.acts && t.name !== 'open_channel',
        idempotentHint: t.readOnly || t.name === 'stop',
        // Units and the platform are outside this machine's files; a project write is not.
        openWorldHint: t.acts && (t.group === undefined || t.group === 'units' || t.group === 'platform'),
      },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const spec = TOOL_BY_NAME.get(req.params.name);
    if (!spec) return fail('unknown_tool', `There is no tool ${JSON.stringify(req.params.name)}.`);
    try {
      if (!o.credential) return await readOnly(o, local, spec, req.params.arguments);
      const port = endpointPort(o);
      let res;
      try {
        res = await post(port, o.credential, spec.name, req.params.arguments);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ECONNREFUSED')
          return fail('host_not_running', `The local host is not running (nothing listens on 127.0.0.1:${port}): start it with \`svc-host\`.`);
        return fail('host_unreachable', `The local host did not answer: ${(err as Error).message}`);
      }
      if (res.status === 200) return ok(res.body.result);
      const e = res.body?.error ?? { code: 'host_error', message: `The local host answered ${res.status}.` };
      return fail(e.code, e.message);
    } catch (err) {
      if (err instanceof ControlError) return fail(err.code, err.message);
      o.log.error('relay: tool failed', { tool: spec.name, error: (err as Error).message });
      return fail('internal_error', 'The relay failed.');
    }
  });
  server.onclose = () => void local.close();
  return server;
}

/** `svc-host mcp`: the relay on stdio. stdout carries only the protocol; the log goes to stderr. */
export async function runRelay(o: RelayOptions): Promise<void> {
  const server = createRelayServer(o);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  o.log.info('relay: serving MCP on stdio', { readOnly: !o.credential });
  await new Promise<void>((resolve) => {
    const closed = server.onclose;
    server.onclose = () => {
      closed?.();
      resolve();
    };
    process.stdin.once('end', () => resolve());
  });
  keepAlive.destroy();
  await server.close().catch(() => {});
}
