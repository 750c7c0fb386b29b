import { ProjectTools } from './project/handlers.js';
import { Project } from './project/project.js';
import type { ToolSpec } from './tool-spec.js';
import { ControlError } from './units/units.js';

/**
 * What a relay without the host credential serves itself, from the project folder
 * (SVC_HOST_PROJECT or --project): it reads and shows, and never acts. The running host's
 * endpoint keeps its own rules (the credential on every call); the relay does not go through it.
 */
export const LOCAL_READS: ReadonlySet<string> = new Set([
  'get_project',
  'project_status',
  'list_worlds',
  'get_world',
  'list_devices',
  'get_device',
  'read_file',
  'graph_query',
  'graph_search',
  'list_panes',
  'open_file',
  'show_world',
]);

/** Why a tool needs the credential, for the refusal's message (what it does that reading does not). */
export function whyCredential(spec: ToolSpec): string {
  switch (spec.group) {
    case 'project':
    case 'files':
      return 'writes to the project folder (journaled first)';
    case 'compute':
      return 'runs code or a simulation on this machine';
    case 'platform':
      return spec.name === 'list_hosts' || spec.name === 'host_call'
        ? 'reaches other hosts through the platform'
        : 'works with markets on the platform';
    case 'outreach':
      return 'works on outreach (contacts, mail)';
    case 'workbench':
      return 'reads or writes a thread on the platform';
    default:
      return spec.acts ? 'acts on a unit' : 'asks the running host (live units, grants, channels)';
  }
}

/** The project tools over the project folder, with no journal, no platform and no sandbox: only LOCAL_READS reach them. */
export class LocalReads {
  private tools: Promise<ProjectTools> | undefined;

  constructor(private readonly folder: string | undefined) {}

  async run(spec: ToolSpec, args: Record<string, unknown>): Promise<unknown> {
    if (!LOCAL_READS.has(spec.name)) throw new ControlError('read_only', `${spec.name} is not served without the credential.`, 403);
    this.tools ??= this.open();
    return (await this.tools).run(spec, args, { via: 'local' });
  }

  private async open(): Promise<ProjectTools> {
    // No folder: the tools themselves answer no_project, as the host's do.
    const project = this.folder ? await Project.open(this.folder) : undefined;
    return new ProjectTools({ project });
  }

  async close(): Promise<void> {
    const tools = await this.tools?.catch(() => undefined);
    await tools?.close();
  }
}
