import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `svch_` + 64 lowercase hex: the host credential the platform gave when the machine was paired. */
export const HOST_CREDENTIAL_RE = /^svch_[0-9a-f]{64}$/;
const CREDENTIAL_ANYWHERE_RE = /svch_[0-9a-f]{8,}/i;

/** A reason the host will not start (or will not act): said to the user as is, never with a secret in it. */
export class HostSetupError extends Error {
  override name = 'HostSetupError';
}

/** The user's config folder for svc: `%APPDATA%\svc`, `$XDG_CONFIG_HOME/svc` or `~/.config/svc`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'svc');
  return path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'svc');
}

/** Where the credential file is looked for when SVC_HOST_CREDENTIAL_FILE is not set. */
export const defaultCredentialFile = (env: NodeJS.ProcessEnv = process.env) => path.join(configDir(env), 'host-credential');

/**
 * A credential on the command line is visible to every user of the machine (`ps`, /proc) and lands
 * in shell history: the host refuses to start and says why. Flags that would carry one are refused
 * whatever they hold, and so is any argument that looks like a host credential.
 */
export function refuseCredentialInArgv(argv: readonly string[]): void {
  for (const arg of argv) {
    const flag = arg.split('=')[0]!.toLowerCase();
    if (['--credential', '--host-credential', '--token', '--key'].includes(flag) || CREDENTIAL_ANYWHERE_RE.test(arg)) {
      throw new HostSetupError(
        'A host credential on the command line is refused: other users of this machine can read it (ps, /proc) and it stays in ' +
          'shell history. Set SVC_HOST_CREDENTIAL, or put it in a file readable only by you (chmod 600) named by ' +
          'SVC_HOST_CREDENTIAL_FILE (default ' +
          defaultCredentialFile() +
          ').',
      );
    }
  }
}

export interface LoadedCredential {
  credential: string;
  /** Where it came from (never the value): `SVC_HOST_CREDENTIAL` or the file's path. */
  source: string;
}

/**
 * The host credential: SVC_HOST_CREDENTIAL, else the file SVC_HOST_CREDENTIAL_FILE (default in the
 * user's config folder). A file that its group or other users may read or write is refused (the
 * credential acts for the machine). No credential at all is `undefined`: the relay then runs
 * read-only.
 */
export function loadCredential(env: NodeJS.ProcessEnv = process.env): LoadedCredential | undefined {
  const fromEnv = env.SVC_HOST_CREDENTIAL?.trim();
  if (fromEnv) {
    if (!HOST_CREDENTIAL_RE.test(fromEnv)) {
      throw new HostSetupError('SVC_HOST_CREDENTIAL is not a host credential (svch_ followed by 64 lowercase hex digits).');
    }
    return { credential: fromEnv, source: 'SVC_HOST_CREDENTIAL' };
  }
  const explicit = env.SVC_HOST_CREDENTIAL_FILE?.trim();
  const file = explicit || defaultCredentialFile(env);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !explicit) return undefined;
    throw new HostSetupError(`The credential file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`);
  }
  if (!stat.isFile()) throw new HostSetupError(`The credential file ${file} is not a regular file.`);
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(3, '0');
    throw new HostSetupError(`The credential file ${file} is open to other users (mode ${mode}); it must be readable by you only: chmod 600 ${file}`);
  }
  const credential = fs.readFileSync(file, 'utf8').trim();
  if (!HOST_CREDENTIAL_RE.test(credential)) {
    throw new HostSetupError(`The credential file ${file} does not hold a host credential (svch_ followed by 64 lowercase hex digits).`);
  }
  return { credential, source: file };
}

/**
 * A key the host's owner gave it to act with on the platform's market and host routes
 * (SVC_HOST_PLATFORM_KEY, or the file SVC_HOST_PLATFORM_KEY_FILE with the same rules as the
 * credential file). Typically an agent's API key: the platform applies that agent's limits.
 */
export function loadPlatformKey(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.SVC_HOST_PLATFORM_KEY?.trim();
  if (fromEnv) return fromEnv;
  const file = env.SVC_HOST_PLATFORM_KEY_FILE?.trim();
  if (!file) return undefined;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    throw new HostSetupError(`The platform key file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`);
  }
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
    throw new HostSetupError(`The platform key file ${file} is open to other users; it must be readable by you only: chmod 600 ${file}`);
  }
  return fs.readFileSync(file, 'utf8').trim() || undefined;
}
