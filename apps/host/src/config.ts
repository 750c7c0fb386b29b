import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { HostSetupError } from './credential.js';
import type { UnitDriver } from './units/driver.js';
import { SimulatedDriver } from './units/simulated.js';
import { SocketDriver } from './units/socket.js';

/** The host's settings, from its environment (docs/host.md lists them). No setting moves the endpoint off loopback. */
export interface HostConfig {
  /** The platform (SVC_BASE_URL, default https://api.svc.dev). */
  baseUrl: string;
  /** The local endpoint's port on 127.0.0.1 and ::1 (SVC_HOST_PORT, default 4747; 0: any free port). */
  port: number;
  /** Journal and endpoint file (SVC_HOST_DATA_DIR). */
  dataDir: string;
  /** The units file (SVC_HOST_UNITS_FILE); without one, a single simulated unit `sim-1`. */
  unitsFile?: string;
  grantsPollMs: number;
  /** The project folder the host serves (SVC_HOST_PROJECT, or `--project <folder>`). */
  project?: string;
  /** Outreach mail: SVC_HOST_SMTP_URL and SVC_HOST_SMTP_FROM (both, or neither). */
  smtp?: { url: string; from: string };
}

export const DEFAULT_PORT = 4747;

export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === 'win32' && env.LOCALAPPDATA) return path.join(env.LOCALAPPDATA, 'svc', 'host');
  return path.join(env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state'), 'svc', 'host');
}

function int(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new HostSetupError(`${name} must be an integer from ${min} to ${max}.`);
  return n;
}

function smtpConfig(env: NodeJS.ProcessEnv): HostConfig['smtp'] {
  const url = env.SVC_HOST_SMTP_URL;
  const from = env.SVC_HOST_SMTP_FROM;
  if (!url && !from) return undefined;
  if (!url || !from) throw new HostSetupError('SVC_HOST_SMTP_URL and SVC_HOST_SMTP_FROM go together (outreach mail needs a server and a sender).');
  if (!/^smtps?:\/\//.test(url)) throw new HostSetupError('SVC_HOST_SMTP_URL must be smtp://… or smtps://….');
  return { url, from };
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): HostConfig {
  const baseUrl = env.SVC_BASE_URL || 'https://api.svc.dev';
  try {
    new URL(baseUrl);
  } catch {
    throw new HostSetupError('SVC_BASE_URL must be a URL such as https://api.svc.dev.');
  }
  return {
    baseUrl,
    port: int(env, 'SVC_HOST_PORT', DEFAULT_PORT, 0, 65535),
    dataDir: env.SVC_HOST_DATA_DIR || defaultDataDir(env),
    unitsFile: env.SVC_HOST_UNITS_FILE || undefined,
    grantsPollMs: int(env, 'SVC_HOST_GRANTS_POLL_MS', 60_000, 1000, 3_600_000),
    project: env.SVC_HOST_PROJECT || undefined,
    smtp: smtpConfig(env),
  };
}

/**
 * The units file: `{"units": [{"name": "stage-1", "driver": "simulated"}, {"name": "press",
 * "driver": "socket", "host": "192.168.1.20", "port": 7000}]}`.
 */
export function loadUnits(file: string | undefined): Map<string, UnitDriver> {
  const units = new Map<string, UnitDriver>();
  if (!file) {
    units.set('sim-1', new SimulatedDriver());
    return units;
  }
  let doc: { units?: Array<Record<string, unknown>> };
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new HostSetupError(`The units file ${file} cannot be read as JSON: ${(err as Error).message}`);
  }
  for (const u of doc.units ?? []) {
    const name = String(u.name ?? '');
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name))
      throw new HostSetupError(`units file: bad unit name ${JSON.stringify(u.name)} (letters, digits, _ . -).`);
    if (units.has(name)) throw new HostSetupError(`units file: the unit ${name} is named twice.`);
    if (u.driver === 'simulated') units.set(name, new SimulatedDriver({ model: typeof u.model === 'string' ? u.model : undefined }));
    else if (u.driver === 'socket' && typeof u.host === 'string' && Number.isInteger(u.port))
      units.set(name, new SocketDriver({ host: u.host, port: u.port as number }));
    else throw new HostSetupError(`units file: unit ${name}: driver must be "simulated" or "socket" (with host and port).`);
  }
  return units;
}
