import fs from 'node:fs';
import path from 'node:path';

import { Connection } from './connection.js';
import { Control } from './control.js';
import { HostSetupError } from './credential.js';
import { type Endpoint, startEndpoint } from './endpoint.js';
import { GrantBook } from './grants.js';
import { Journal } from './journal.js';
import type { Log } from './log.js';
import { ProjectTools } from './project/handlers.js';
import { smtpMailer, type SmtpOptions } from './project/mailer.js';
import { PlatformClient } from './project/platform.js';
import { Project } from './project/project.js';
import type { UnitDriver } from './units/driver.js';
import { Units } from './units/units.js';

export interface HostOptions {
  credential: string;
  baseUrl: string;
  port: number;
  dataDir: string;
  units: Map<string, UnitDriver>;
  log: Log;
  /** The project folder this host serves (worlds, devices, files); without one the project tools answer no_project. */
  project?: string;
  /** A key the owner gave the host to act with on the platform (market and host tools); else the host credential. */
  platformKey?: string;
  /** Where outreach mail goes (SVC_HOST_SMTP_URL, SVC_HOST_SMTP_FROM); without it outreach_send answers smtp_not_configured. */
  smtp?: SmtpOptions;
  grantsPollMs?: number;
  /** Connect out to the platform (default true); false: local endpoint only. */
  connect?: boolean;
  /** Reconnection backoff bounds (default 500 ms to 30 s). */
  backoff?: { minMs: number; maxMs: number };
}

export interface RunningHost {
  endpoint: Endpoint;
  control: Control;
  grants: GrantBook;
  journal: Journal;
  units: Units;
  project?: Project;
  projectTools: ProjectTools;
  /** The connection out to the platform (absent with `connect: false`). */
  connection?: Connection;
  stop(): Promise<void>;
}

export const journalFile = (dataDir: string) => path.join(dataDir, 'journal.jsonl');
export const endpointFile = (dataDir: string) => path.join(dataDir, 'endpoint.json');

/** Starts the host: journal, grants, units, the loopback endpoint and the connection out to the platform. */
export async function startHost(o: HostOptions): Promise<RunningHost> {
  fs.mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  const journal = await Journal.open(journalFile(o.dataDir));
  const grants = new GrantBook({ baseUrl: o.baseUrl, credential: o.credential, log: o.log, pollMs: o.grantsPollMs });
  grants.start();
  const units = new Units(o.units);
  // A project folder that is not there stops the host before it listens (said as a setup error).
  const project = o.project
    ? await Project.open(o.project).catch((err: Error) => {
        throw new HostSetupError(err.message);
      })
    : undefined;
  const platform = new PlatformClient({ baseUrl: o.baseUrl, credential: o.credential, actingKey: o.platformKey });
  const mailer = o.smtp ? smtpMailer(o.smtp) : undefined;
  const projectTools = new ProjectTools({ journal, project, platform, mailer });
  const control = new Control({ units, grants, journal, project: projectTools });
  const endpoint = await startEndpoint({ port: o.port, credential: o.credential, control, log: o.log });
  // Where the relay finds the endpoint (the port only: the credential is never written here).
  fs.writeFileSync(endpointFile(o.dataDir), JSON.stringify({ port: endpoint.port, pid: process.pid }) + '\n', { mode: 0o600 });
  let connection: Connection | undefined;
  if (o.connect !== false) {
    connection = new Connection({
      baseUrl: o.baseUrl,
      credential: o.credential,
      control,
      grants,
      log: o.log,
      minBackoffMs: o.backoff?.minMs,
      maxBackoffMs: o.backoff?.maxMs,
    });
    connection.start();
  }
  return {
    connection,
    endpoint,
    control,
    grants,
    journal,
    units,
    project,
    projectTools,
    async stop() {
      grants.stop();
      await connection?.stop();
      await endpoint.close();
      await units.closeAll();
      await projectTools.close();
      mailer?.close();
      for (const d of o.units.values()) (d as { device?: { halt(): void } }).device?.halt();
      await journal.close();
      fs.rmSync(endpointFile(o.dataDir), { force: true });
    },
  };
}
