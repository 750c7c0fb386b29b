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
import { SvcConfigError, SvcError } from './errors.js';

/** Each group's commands, as `svc --help` and `svc <group> --help` show them. */
const GROUPS: Record<string, string> = {
  keys: 'create [--name N] | list | revoke <keyId>',
  drive: `ls [folderId] | put <file> [--name N] [--parent F] [--if-match E] [--force] | get <id> [dest|-] [--force]
           | mv <id> [newName] [--to folderId|root] | rm <id> | mkdir <name> [--parent F]`,
  threads: `new [message] [--agent A] [--title T] [--wait] | say <id> <message> [--wait] [--mode M]
           | tail <id> [--after N] [--until-idle] | ls | approvals [id] | approve <id> [approvalId] [--args JSON]
           | reject <id> [approvalId] [--reason R] | fork <id> [--at SEQ] [--title T]
           | edit <id> <messageId> <message> [--title T] [--wait]`,
  models: 'ls',
  profiles: 'log <id> [--branch B] | diff <id> <fromVersion> <toVersion>',
  trading: `venues | order --symbol S --side buy|sell --qty Q|--notional N [--type T] [--price P] [--venue V] [--tif T]
             [--stop-price P] [--trail-price D|--trail-percent PCT] [--class bracket|oco|oto --take-profit P
             --stop-loss P [--stop-loss-limit P]|--stop-loss-trail D|--stop-loss-trail-percent PCT]
           | cancel <orderId> | events [--after N] [--follow]`,
};
const ENVIRONMENT = 'Environment: SVC_API_KEY (required), SVC_BASE_URL (default https://api.svc.dev), SVC_HOST_CREDENTIAL(_FILE).\n';
const USAGE = `usage: svc <group> <command> [arguments] [--json] [--base-url URL]
       svc --version | svc [<group>] --help

${Object.entries(GROUPS)
  .map(([g, commands]) => `  ${g.padEnd(8)} ${commands}`)
  .join('\n')}

${ENVIRONMENT}`;
const groupUsage = (group: string) =>
  `usage: svc ${group} <command> [arguments] [--json] [--base-url URL]\n\n  ${group} ${GROUPS[group]!.replace(/\n {11}/g, `\n${' '.repeat(group.length + 3)}`)}\n\n${ENVIRONMENT}`;

/** The package's version, from its package.json (one folder above dist/, in the workspace and when installed). */
function version(): string {
  const manifest = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return `${manifest.name} ${manifest.version}`;
}

/**
 * A host credential file, read as svc-host reads it: one its group or other users may read or write is refused
 * (the credential acts for the machine).
 */
function readCredentialFile(file: string): string {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat) throw new SvcConfigError(`The credential file ${file} cannot be read: ENOENT.`);
  if (!stat.isFile()) throw new SvcConfigError(`The credential file ${file} is not a regular file.`);
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(3, '0');
    throw new SvcConfigError(`The credential file ${file} is open to other users (mode ${mode}); it must be readable by you only: chmod 600 ${file}`);
  }
  return fs.readFileSync(file, 'utf8').trim();
}

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
  'notional',
  'price',
  'venue',
  'tif',
  'client-order-id',
  'args',
  'reason',
  'at',
  'stop-price',
  'trail-price',
  'trail-percent',
  'class',
  'take-profit',
  'stop-loss',
  'stop-loss-limit',
  'stop-loss-trail',
  'stop-loss-trail-percent',
  'base-url',
];
const SWITCHES = ['json', 'force', 'wait', 'until-idle', 'follow', 'quiet', 'help', 'version'];

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
    if (flags.version) {
      out.stdout(`${version()}\n`);
      return EXIT.ok;
    }
    if (flags.help || !group) {
      if (group && !Object.hasOwn(GROUPS, group)) throw new UsageError(`unknown group: ${group}`);
      out.stdout(group ? groupUsage(group) : USAGE);
      return group || flags.help ? EXIT.ok : EXIT.usage;
    }
    const command: Command | undefined = COMMANDS[group]?.[name ?? ''];
    if (!command) throw new UsageError(`unknown command: ${[group, name].filter(Boolean).join(' ')}`);
    const hostFile = env.SVC_HOST_CREDENTIAL ? undefined : env.SVC_HOST_CREDENTIAL_FILE;
    const hostCredential = hostFile ? readCredentialFile(hostFile) : undefined;
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

// A reader that stops early (`svc threads tail … | head -1`) closes the pipe: stop quietly, as other commands do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(EXIT.ok);
  throw err;
});
process.exitCode = await main(process.argv.slice(2));
