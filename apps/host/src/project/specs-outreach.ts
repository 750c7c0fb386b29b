/** The outreach sequences' tools and the workbench's (the others are in specs.ts). */
import type { ToolSpec } from '../tool-spec.js';
import { filePath, id, obj, spec } from './specs.js';

const enrollment = { type: 'string', minLength: 1, maxLength: 64, description: 'The enrollment id (outreach_start gave it).' };

/** Outreach: contacts through sequences of mails (outreach.read, outreach.write, outreach.send). */
export const OUTREACH_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'outreach_apps',
      title: 'Outreach channels and sequences',
      description:
        'The channels outreach can send through (email over SMTP: configured or not, from which address) and the sequences of outreach/sequences.json.',
      verb: 'outreach.read',
      inputSchema: obj({}),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_identify',
      title: 'Identify a contact',
      description: 'Makes or updates a contact by email address (name, fields used by {{fields.x}} in templates).',
      verb: 'outreach.write',
      readOnly: false,
      inputSchema: obj(
        {
          email: { type: 'string', minLength: 3, maxLength: 320 },
          name: { type: 'string', maxLength: 200 },
          fields: { type: 'object', description: 'name → string' },
        },
        ['email'],
      ),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_start',
      title: 'Start a sequence',
      description: "Enrolls a contact (id or email) in a sequence; its first step is due after the step's waitDays.",
      verb: 'outreach.write',
      readOnly: false,
      inputSchema: obj({ contact: { type: 'string', minLength: 1, maxLength: 320 }, sequence: id('The sequence id.') }, ['contact', 'sequence']),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_send',
      title: 'Send the due step',
      description:
        "Sends an enrollment's current step by email (SMTP), journaled before it goes; at most once per step. early: send before it is due.",
      verb: 'outreach.send',
      readOnly: false,
      acts: true,
      inputSchema: obj({ enrollment, early: { type: 'boolean' } }, ['enrollment']),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_reply',
      title: 'Record a reply',
      description: 'The contact replied: the enrollment stops (no further step is sent).',
      verb: 'outreach.write',
      readOnly: false,
      inputSchema: obj({ enrollment, text: { type: 'string', maxLength: 20_000 } }, ['enrollment']),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_outcome',
      title: 'Record an outcome',
      description: 'Closes an enrollment with its outcome (meeting, interested, not_interested, bounced, unsubscribed, other).',
      verb: 'outreach.write',
      readOnly: false,
      inputSchema: obj(
        {
          enrollment,
          outcome: { type: 'string', enum: ['meeting', 'interested', 'not_interested', 'bounced', 'unsubscribed', 'other'] },
          note: { type: 'string', maxLength: 2000 },
        },
        ['enrollment', 'outcome'],
      ),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_due',
      title: 'Steps due',
      description: 'Active enrollments whose next step is due (now, or at a given time), earliest first.',
      verb: 'outreach.read',
      inputSchema: obj({ at: { type: 'string', maxLength: 40, description: 'An ISO time (default now).' } }),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_advance',
      title: 'Skip a step',
      description: 'Moves an enrollment past its current step without sending it (also a step whose send is in doubt).',
      verb: 'outreach.write',
      readOnly: false,
      inputSchema: obj({ enrollment }, ['enrollment']),
    },
    'outreach',
  ),
  spec(
    {
      name: 'outreach_status',
      title: 'Outreach status',
      description: 'One enrollment with its history, or totals: contacts, enrollments by status and sequence, outcomes, mails sent.',
      verb: 'outreach.read',
      inputSchema: obj({ enrollment }),
    },
    'outreach',
  ),
];

const thread = { type: 'string', minLength: 1, maxLength: 64, description: 'A thread id of the platform.' };

/** The workbench: a local view that shows (workbench.view), and threads of the platform (threads.read, threads.say). */
export const WORKBENCH_TOOLS: ToolSpec[] = [
  spec(
    {
      name: 'list_panes',
      title: 'List panes',
      description: "The workbench's panes, and (for a caller on this machine) the URL of the view that shows them.",
      verb: 'workbench.view',
      inputSchema: obj({}),
    },
    'workbench',
  ),
  spec(
    {
      name: 'open_file',
      title: 'Open a file in the workbench',
      description: 'Shows a project file in a workbench pane (the view reads it when shown).',
      verb: 'workbench.view',
      readOnly: false,
      inputSchema: obj({ path: filePath }, ['path']),
    },
    'workbench',
  ),
  spec(
    {
      name: 'show_world',
      title: 'Show a world',
      description: 'Shows a world of the project in a workbench pane.',
      verb: 'workbench.view',
      readOnly: false,
      inputSchema: obj({ world: id('The world id.') }, ['world']),
    },
    'workbench',
  ),
  spec(
    {
      name: 'thread_read',
      title: 'Read a thread',
      description: "A platform thread's events after a seq (and shows them in a workbench pane).",
      verb: 'threads.read',
      inputSchema: obj({ thread, after: { type: 'integer', minimum: 0 }, limit: { type: 'integer', minimum: 1, maximum: 200 } }, ['thread']),
    },
    'workbench',
  ),
  spec(
    {
      name: 'thread_say',
      title: 'Say something in a thread',
      description: 'Sends a message to a platform thread (POST /threads/:id/inject). Journaled before it is sent.',
      verb: 'threads.say',
      readOnly: false,
      acts: true,
      inputSchema: obj({ thread, text: { type: 'string', minLength: 1, maxLength: 20_000 }, clientMessageId: { type: 'string', maxLength: 100 } }, [
        'thread',
        'text',
      ]),
    },
    'workbench',
  ),
];
