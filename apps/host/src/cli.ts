#!/usr/bin/env node
import { loadUnits, readConfig } from './config.js';
import { HostSetupError, loadCredential, loadPlatformKey, refuseCredentialInArgv } from './credential.js';
import { startHost } from './host.js';
import { createLog } from './log.js';

const USAGE = `svc-host — the svc local host

  svc-host [serve] [--project <folder>]
                     run the host: the loopback control endpoint and the connection to the platform,
                     serving the project folder (also SVC_HOST_PROJECT)
  svc-host mcp       a stdio MCP server relaying to the running host's endpoint

The credential comes from SVC_HOST_CREDENTIAL or the file SVC_HOST_CREDENTIAL_FILE (never the
command line). See docs/host.md.`;

/** Removes `--name value` (or `--name=value`) from argv and returns the value. */
function takeOption(argv: string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  const [arg] = argv.splice(i, 1);
  if (arg!.includes('=')) return arg!.slice(name.length + 1);
  const [value] = argv.splice(i, 1);
  if (!value) throw new HostSetupError(`${name} needs a value.`);
  return value;
}

async function main(argv: string[]): Promise<void> {
  refuseCredentialInArgv(argv);
  const project = takeOption(argv, '--project');
  const command = argv[0] ?? 'serve';
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const log = createLog();
  const config = readConfig();
  if (project !== undefined) config.project = project;
  if (command === 'mcp') {
    const { runRelay } = await import('./relay.js');
    await runRelay({ config, credential: loadCredential()?.credential, log, portGiven: !!process.env.SVC_HOST_PORT });
    process.exit(0);
  }
  if (command !== 'serve') throw new HostSetupError(`Unknown command ${JSON.stringify(command)}.\n\n${USAGE}`);
  const loaded = loadCredential();
  if (!loaded) {
    throw new HostSetupError(
      'No host credential: pair this machine (POST /accounts/:id/hosts), then set SVC_HOST_CREDENTIAL or write the credential to a file only you can read (chmod 600) named by SVC_HOST_CREDENTIAL_FILE.',
    );
  }
  log.info('credential loaded', { source: loaded.source });
  const host = await startHost({
    credential: loaded.credential,
    baseUrl: config.baseUrl,
    port: config.port,
    dataDir: config.dataDir,
    units: loadUnits(config.unitsFile),
    log,
    grantsPollMs: config.grantsPollMs,
    project: config.project,
    platformKey: loadPlatformKey(),
    smtp: config.smtp,
  });
  if (config.project) log.info('serving project', { folder: config.project });
  const stop = () => {
    host.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof HostSetupError) process.stderr.write(`svc-host: ${err.message}\n`);
  else process.stderr.write(`svc-host: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(2);
});
