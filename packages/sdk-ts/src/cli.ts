#!/usr/bin/env node
/**
 * `svc`: the platform from a shell. `svc <group> <command> [arguments] [--flags]`; the same
 * variables as the SDK (SVC_API_KEY, SVC_BASE_URL, SVC_HOST_CREDENTIAL). Tables for people, `--json`
 * for programs; exit codes in cli/format.ts (docs/sdk.md).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

import { type Command, COMMANDS, type Flags } from './cli/commands.js';
import { EXIT, exitCodeOf, type Out, UsageError } from './cli/format.js';
import { Svc } from './client.js';
import { SvcError } from './errors.js';

const USAGE = `usage: svc <group> <command> [arguments] [--json] [--base-url URL]

  keys     create [--name N] | list | revoke <keyId>
  drive    ls [folderId] | put <file> [--name N] [--parent F] [--if-match E] [--force] | get <id> [dest|-] [--force]
           | mv <id> [newName] [--to folderId|root] | rm <id> | mkdir <name> [--parent F]
  threads  new [message] [--agent A] [--title T] [--wait] | say <id> <message> [--wait] [--mode M]
           | tail <id> [--after N] [--until-idle] | ls
  models   ls
  profiles log <id> [--branch B] | diff <id> <fromVersion> <toVersion>
  trading  venues | order --symbol S --side buy|sell --qty Q [--type T] [--price P] [--venue V] [--tif T] | cancel <orderId>

Environment: SVC_API_KEY (required), SVC_BASE_URL (default https://api.svc.dev), SVC_HOST_CREDENTIAL(_FILE).
`;

const FLAGS = [
  'name',
  'parent',
  'project',
  'type',
  'if-match',
  'to',
  'agent',
  'title',
  'mode',
  'after',
  'branch',
  'symbol',
  'side',
  'qty',
  'price',
  'venue',
  'tif',
  'client-order-id',
  'base-url',
];
const SWITCHES = ['json', 'force', 'wait', 'until-idle', 'quiet', 'help'];

export async function main(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const out: Out = {
    json: false,
    progress: true,
    stdout: (s) => void process.stdout.write(s),
    stderr: (s) => void process.stderr.write(s),
  };
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        ...Object.fromEntries(FLAGS.map((f) => [f, { type: 'string' as const }])),
        ...Object.fromEntries(SWITCHES.map((f) => [f, { type: 'boolean' as const }])),
      },
    });
    const flags = values as Flags;
    out.json = Boolean(flags.json);
    out.progress = !flags.quiet;
    const [group, name, ...args] = positionals;
    if (flags.help || !group) {
      out.stdout(USAGE);
      return group || flags.help ? EXIT.ok : EXIT.usage;
    }
    const command: Command | undefined = COMMANDS[group]?.[name ?? ''];
    if (!command) throw new UsageError(`unknown command: ${[group, name].filter(Boolean).join(' ')}`);
    const hostFile = env.SVC_HOST_CREDENTIAL ? undefined : env.SVC_HOST_CREDENTIAL_FILE;
    const hostCredential = hostFile ? fs.readFileSync(hostFile, 'utf8').trim() : undefined;
    const svc = new Svc({ env, hostCredential, baseUrl: flags['base-url'] as string | undefined, userAgent: 'svc-cli' });
    await command(svc, args, flags, out);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    const code = exitCodeOf(err);
    if (out.json && err instanceof SvcError)
      out.stderr(JSON.stringify({ error: { code: err.code, message: err.message, requestId: err.requestId, status: err.status } }) + '\n');
    else out.stderr(`svc: ${(err as Error).message}${err instanceof SvcError && err.requestId ? ` (request ${err.requestId})` : ''}\n`);
    if (code === EXIT.usage) out.stderr(`Run svc --help for usage.\n`);
    return code;
  }
}

process.exitCode = await main(process.argv.slice(2));
