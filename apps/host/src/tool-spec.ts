/**
 * The control tools: the one list the local endpoint (`POST /control/<name>`), platform calls
 * (`POST /hosts/:hostId/call` with `tool: <name>`) and the stdio MCP relay all serve.
 *
 * `verb` is what a standing grant held by the host must give (`units.*` gives them all): `any`
 * means any live grant at all (stop: whoever may touch the host may halt it), `null` none
 * (list_grants: what the host holds is how one learns which verb is missing).
 */
export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  verb: string | 'any' | null;
  readOnly: boolean;
  /** Changes something (a unit, a file, an order): journaled before it is done. */
  acts: boolean;
  /** units (default): a unit's channel; project, files, compute, platform: the project tools (docs/host.md). */
  group?: 'units' | 'project' | 'files' | 'compute' | 'platform' | 'outreach' | 'workbench';
  inputSchema: { type: 'object'; properties: Record<string, object>; required?: string[]; additionalProperties: false };
}
