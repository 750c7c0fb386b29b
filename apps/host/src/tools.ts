import { COMPUTE_TOOLS, FILE_TOOLS, PLATFORM_TOOLS, PROJECT_TOOLS } from './project/specs.js';
import { OUTREACH_TOOLS, WORKBENCH_TOOLS } from './project/specs-outreach.js';
import type { ToolSpec } from './tool-spec.js';

export type { ToolSpec } from './tool-spec.js';

const unit = { type: 'string', minLength: 1, maxLength: 64, description: 'The unit (device) name, as list_units shows it.' };
const unitOnly = { type: 'object' as const, properties: { unit }, required: ['unit'], additionalProperties: false as const };

export const UNIT_TOOLS: ToolSpec[] = [
  {
    name: 'list_grants',
    title: 'List grants',
    description: 'The standing grants this host holds (verbs and scopes), as the platform last reported them.',
    verb: null,
    readOnly: true,
    acts: false,
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'list_units',
    title: 'List units',
    description: 'The units (devices) this host controls: name, driver, device state, open channel.',
    verb: 'units.list',
    readOnly: true,
    acts: false,
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'open_channel',
    title: 'Open a channel',
    description: 'Opens the command channel to a unit (opening an open one again is a retry).',
    verb: 'units.open',
    readOnly: false,
    acts: true,
    inputSchema: unitOnly,
  },
  {
    name: 'arm',
    title: 'Arm a unit',
    description: 'Arms a unit so that it will run a program (ARM).',
    verb: 'units.arm',
    readOnly: false,
    acts: true,
    inputSchema: unitOnly,
  },
  {
    name: 'run_program',
    title: 'Run a program',
    description: 'Runs a program on an armed unit: steps separated by ";" (simulated units: MOVE <distance>, WAIT <ms>, HOME).',
    verb: 'units.run',
    readOnly: false,
    acts: true,
    inputSchema: {
      type: 'object',
      properties: { unit, program: { type: 'string', minLength: 1, maxLength: 4000, description: 'e.g. "MOVE 10; WAIT 100; HOME"' } },
      required: ['unit', 'program'],
      additionalProperties: false,
    },
  },
  {
    name: 'send_command',
    title: 'Send a command',
    description: 'Sends one command line to a unit as is and returns its answer line (OK … or ERR …).',
    verb: 'units.command',
    readOnly: false,
    acts: true,
    inputSchema: {
      type: 'object',
      properties: { unit, command: { type: 'string', minLength: 1, maxLength: 512, description: 'One printable ASCII line, e.g. "STATUS".' } },
      required: ['unit', 'command'],
      additionalProperties: false,
    },
  },
  {
    name: 'read_channel',
    title: 'Read a channel',
    description: "Lines sent to and received from a unit's channel after a line number (events of a running program included).",
    verb: 'units.read',
    readOnly: true,
    acts: false,
    inputSchema: {
      type: 'object',
      properties: {
        unit,
        after: { type: 'integer', minimum: 0, description: 'Return lines after this one (default 0: from the start kept).' },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
      },
      required: ['unit'],
      additionalProperties: false,
    },
  },
  {
    name: 'stop',
    title: 'Stop a unit',
    description: 'Stops a unit at once (STOP), opening a channel for it if none is open. Needs any grant at all.',
    verb: 'any',
    readOnly: false,
    acts: true,
    inputSchema: unitOnly,
  },
  {
    name: 'close_channel',
    title: 'Close a channel',
    description: 'Closes the command channel to a unit (closing a closed one succeeds).',
    verb: 'units.close',
    readOnly: false,
    acts: true,
    inputSchema: unitOnly,
  },
  {
    name: 'read_journal',
    title: 'Read the journal',
    description: 'Entries of the host journal (every action, written before it reached the unit; results; refusals).',
    verb: 'units.journal',
    readOnly: true,
    acts: false,
    inputSchema: {
      type: 'object',
      properties: {
        after: { type: 'integer', minimum: 0, description: 'Entries after this seq (default: the last `limit`).' },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
      },
      additionalProperties: false,
    },
  },
];

export const TOOLS: ToolSpec[] = [
  ...UNIT_TOOLS,
  ...PROJECT_TOOLS,
  ...FILE_TOOLS,
  ...COMPUTE_TOOLS,
  ...PLATFORM_TOOLS,
  ...OUTREACH_TOOLS,
  ...WORKBENCH_TOOLS,
];

export const TOOL_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));
