import type { TestStack } from '../stack';
import type { State, Step } from './types';

/** Steps of the threads, agents, keys and accounts tools added for issue 21 (helper "work"). */

const Z26 = '0'.repeat(26);
const SLOW = '/tool run_code {"code":"const end = Date.now() + 3000; while (Date.now() < end) {} 1"}';

async function settle(t: TestStack, key: string, id: string) {
  await t.ok('POST', `/threads/${id}/wait`, key, { timeoutMs: 20_000 });
}

const threadSteps: Step[] = [
  {
    tool: 'threads_wait',
    before: async (s: State, t, key) => {
      s.workAgentId = (await t.ok('POST', '/agents', key, { name: `work agent ${s.run}` })).body.id;
      const th = await t.ok('POST', '/threads', key, { agentId: s.workAgentId, title: 'Work thread', message: '/tool whoami {}' });
      s.thrId = th.body.id;
      s.thrRunId = th.body.runId;
    },
    valid: (s) => ({ id: s.thrId, timeoutMs: 15_000 }),
    invalid: (s) => ({ id: s.thrId, timeoutMs: 999_999 }),
  },
  {
    tool: 'threads_messages_list',
    valid: (s) => ({ id: s.thrId }),
    invalid: (s) => ({ id: s.thrId, role: 'system' }),
    keep: (s, b) => (s.thrMsgId = b.messages[0].id),
  },
  {
    tool: 'threads_messages_get',
    valid: (s) => ({ id: s.thrId, messageId: s.thrMsgId }),
    invalid: (s) => ({ id: s.thrId, messageId: `msg_${Z26}` }),
  },
  {
    tool: 'threads_messages_pending',
    before: async (s, t, key) => {
      const slow = await t.ok('POST', '/threads', key, { agentId: s.workAgentId, message: SLOW });
      s.slowThrId = slow.body.id;
      s.waitingMsgId = (await t.ok('POST', `/threads/${s.slowThrId}/inject`, key, { content: 'afterwards', mode: 'enqueue' })).body.messageId;
    },
    valid: (s) => ({ id: s.slowThrId }),
    invalid: () => ({ id: 'nope' }),
  },
  {
    tool: 'threads_messages_update',
    valid: (s) => ({ id: s.slowThrId, messageId: s.waitingMsgId, content: 'edited afterwards' }),
    invalid: (s) => ({ id: s.slowThrId, messageId: s.waitingMsgId, content: '' }),
  },
  {
    tool: 'threads_messages_clear_pending',
    before: async (s, t, key) => {
      await t.ok('POST', `/threads/${s.slowThrId}/inject`, key, { content: 'to clear', mode: 'enqueue' });
    },
    valid: (s) => ({ id: s.slowThrId }),
    invalid: () => ({ id: 'nope' }),
  },
  {
    tool: 'threads_messages_retract',
    valid: (s) => ({ id: s.slowThrId, messageId: s.waitingMsgId }),
    invalid: (s) => ({ id: s.slowThrId, messageId: s.thrMsgId }),
  },
  { tool: 'threads_get_event', valid: (s) => ({ id: s.thrId, seq: '1' }), invalid: (s) => ({ id: s.thrId, seq: '0' }) },
  { tool: 'threads_runs_list', valid: (s) => ({ id: s.thrId }), invalid: (s) => ({ id: s.thrId, limit: 0 }) },
  { tool: 'threads_runs_get', valid: (s) => ({ id: s.thrId, runId: s.thrRunId }), invalid: (s) => ({ id: s.thrId, runId: `run_${Z26}` }) },
  { tool: 'threads_runs_tool_calls', valid: (s) => ({ id: s.thrId, runId: s.thrRunId }), invalid: (s) => ({ id: s.thrId, runId: 'nope' }) },
  { tool: 'threads_runs_context', valid: (s) => ({ id: s.thrId, runId: s.thrRunId }), invalid: (s) => ({ id: s.thrId, runId: `run_${Z26}` }) },
  { tool: 'threads_runs_steps', valid: (s) => ({ id: s.thrId, runId: s.thrRunId }), invalid: (s) => ({ id: s.thrId, runId: `run_${Z26}` }) },
  { tool: 'threads_wait_for_events', valid: (s) => ({ id: s.thrId, after: 0, timeoutMs: 0 }), invalid: (s) => ({ id: s.thrId, after: -1 }) },
  { tool: 'threads_tool_calls_summary', valid: (s) => ({ id: s.thrId }), invalid: () => ({ id: `thr_${Z26}` }) },
  {
    tool: 'threads_fork',
    valid: (s) => ({ id: s.thrId, title: 'forked' }),
    invalid: (s) => ({ id: s.thrId, atSeq: 99_999 }),
    keep: (s, b) => (s.forkId = b.id),
  },
  { tool: 'threads_archive', valid: (s) => ({ id: s.forkId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'threads_unarchive', valid: (s) => ({ id: s.forkId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_tags_add', valid: (s) => ({ id: s.thrId, tag: 'mcp' }), invalid: (s) => ({ id: s.thrId, tag: 'Bad Tag' }) },
  { tool: 'threads_tags_list', valid: () => ({}) },
  { tool: 'threads_tags_remove', valid: (s) => ({ id: s.thrId, tag: 'mcp' }), invalid: (s) => ({ id: s.thrId, tag: '!' }) },
  { tool: 'threads_search', valid: () => ({ q: 'whoami' }), invalid: () => ({ q: '' }) },
  { tool: 'threads_export', valid: (s) => ({ id: s.thrId, format: 'markdown' }), invalid: (s) => ({ id: s.thrId, format: 'pdf' }) },
  { tool: 'threads_usage', valid: (s) => ({ id: s.thrId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_last_reply', valid: (s) => ({ id: s.thrId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_summary', valid: (s) => ({ id: s.thrId }), invalid: () => ({ id: 'thr_x' }) },
  {
    tool: 'threads_approvals_list',
    // A run paused before a tool its agent's approval list names (docs/threads.md, "Approvals"): set through the API (a person's).
    before: async (s, t, key) => {
      const agent = (await t.ok('POST', '/agents', key, { name: `careful ${s.run}` })).body;
      await t.ok('PUT', `/agents/${agent.id}/approval-policy`, key, { tools: ['write_drive_file'] });
      const message = `/tool write_drive_file {"name":"approval-${s.run}.txt","content":"x"}`;
      s.aprThreadId = (await t.ok('POST', '/threads', key, { agentId: agent.id, message })).body.id;
      for (let i = 0; i < 300 && !s.aprId; i++) {
        s.aprId = (await t.ok('GET', `/threads/${s.aprThreadId}/approvals`, key)).body.approvals[0]?.id;
        if (!s.aprId) await new Promise((r) => setTimeout(r, 100));
      }
      s.aprAgentId = agent.id;
    },
    valid: (s) => ({ id: s.aprThreadId, status: 'pending' }),
    invalid: (s) => ({ id: s.aprThreadId, status: 'waiting' }),
  },
  {
    tool: 'threads_approvals_get',
    valid: (s) => ({ id: s.aprThreadId, approvalId: s.aprId }),
    invalid: (s) => ({ id: s.aprThreadId, approvalId: 'apr_x' }),
  },
  { tool: 'approvals_list', valid: () => ({ status: 'pending' }), invalid: () => ({ limit: 0 }) },
  { tool: 'agents_approval_policy_get', valid: (s) => ({ id: s.aprAgentId }), invalid: () => ({ id: 'agt_x' }) },
  { tool: 'threads_approval_policy_get', valid: (s) => ({ id: s.aprThreadId }), invalid: () => ({ id: 'thr_x' }) },
  { tool: 'threads_ask', valid: (s) => ({ id: s.thrId, content: 'one more', timeoutMs: 15_000 }), invalid: (s) => ({ id: s.thrId, content: '' }) },
  { tool: 'threads_search_messages', valid: (s) => ({ id: s.thrId, q: 'one more' }), invalid: (s) => ({ id: s.thrId, q: '' }) },
  { tool: 'threads_participants', valid: (s) => ({ id: s.thrId }), invalid: () => ({ id: `thr_${Z26}` }) },
  { tool: 'threads_metadata_patch', valid: (s) => ({ id: s.thrId, body: { via: 'mcp' } }), invalid: (s) => ({ id: s.thrId, body: [1] }) },
  { tool: 'runs_list', valid: (s) => ({ agentId: s.workAgentId }), invalid: () => ({ status: 'sleeping' }) },
  { tool: 'threads_usage_by_agent', valid: () => ({}), invalid: () => ({ since: 'yesterday' }) },
  { tool: 'threads_archive_idle', valid: () => ({ olderThanDays: 3650 }), invalid: () => ({ olderThanDays: -1 }) },
  { tool: 'threads_set_agent', valid: (s) => ({ id: s.thrId, agentId: s.agentId }), invalid: (s) => ({ id: s.thrId, agentId: `agt_${Z26}` }) },
  {
    tool: 'threads_retry',
    before: async (s, t, key) => {
      // A run of its own, cancelled: whatever the slow thread did before has ended by now.
      await settle(t, key, s.slowThrId);
      await t.ok('POST', `/threads/${s.slowThrId}/inject`, key, { content: SLOW });
      await t.ok('POST', `/threads/${s.slowThrId}/cancel`, key);
      await settle(t, key, s.slowThrId);
    },
    valid: (s) => ({ id: s.slowThrId }),
    invalid: (s) => ({ id: s.thrId }),
  },
  {
    tool: 'threads_list_deleted',
    before: async (s, t, key) => {
      await t.ok('DELETE', `/threads/${s.forkId}`, key);
    },
    valid: () => ({}),
    invalid: () => ({ limit: 0 }),
  },
  { tool: 'threads_restore', valid: (s) => ({ id: s.forkId }), invalid: () => ({ id: `thr_${Z26}` }) },
];

const agentSteps: Step[] = [
  {
    tool: 'agents_ask',
    valid: (s) => ({ id: s.workAgentId, message: 'hello', timeoutMs: 15_000 }),
    invalid: (s) => ({ id: s.workAgentId, message: '' }),
  },
  { tool: 'agents_runs_list', valid: (s) => ({ id: s.workAgentId }), invalid: (s) => ({ id: s.workAgentId, status: 'sleeping' }) },
  { tool: 'agents_usage', valid: (s) => ({ id: s.workAgentId }), invalid: (s) => ({ id: s.workAgentId, since: 'yesterday' }) },
  { tool: 'agents_tool_calls_list', valid: (s) => ({ id: s.workAgentId }), invalid: (s) => ({ id: s.workAgentId, name: 'Not A Tool' }) },
  { tool: 'agents_tools', valid: (s) => ({ id: s.workAgentId }), invalid: () => ({ id: `agt_${Z26}` }) },
  { tool: 'agents_export', valid: (s) => ({ id: s.workAgentId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'agents_clone', valid: (s) => ({ id: s.workAgentId, name: 'cloned by a tool' }), invalid: (s) => ({ id: s.workAgentId, name: '' }) },
  {
    tool: 'agents_list_deleted',
    before: async (s, t, key) => {
      s.goneAgentId = (await t.ok('POST', '/agents', key, { name: `gone ${s.run}` })).body.id;
      await t.ok('DELETE', `/agents/${s.goneAgentId}`, key);
    },
    valid: () => ({}),
    invalid: () => ({ limit: 0 }),
  },
  { tool: 'agents_restore', valid: (s) => ({ id: s.goneAgentId }), invalid: () => ({ id: `agt_${Z26}` }) },
  { tool: 'agents_search', valid: () => ({ q: 'work agent' }), invalid: () => ({ q: '' }) },
  { tool: 'agents_cancel_runs', valid: (s) => ({ id: s.workAgentId }), invalid: () => ({ id: `agt_${Z26}` }) },
  { tool: 'default_agents_add', valid: (s) => ({ agentId: s.workAgentId }), invalid: () => ({ agentId: `agt_${Z26}` }) },
  { tool: 'default_agents_remove', valid: (s) => ({ agentId: s.workAgentId }), invalid: () => ({ agentId: 'nope' }) },
];

const keySteps: Step[] = [
  {
    tool: 'me_api_keys_current',
    before: async (s, t, key) => {
      s.workKeyId = (await t.ok('POST', '/me/api-keys', key, { name: 'work key' })).body.id;
      s.workAgentKeyId = (await t.ok('POST', `/agents/${s.workAgentId}/keys`, key, { name: 'work agent key' })).body.id;
    },
    valid: () => ({}),
  },
  { tool: 'me_api_keys_get', valid: (s) => ({ keyId: s.workKeyId }), invalid: () => ({ keyId: `key_${Z26}` }) },
  { tool: 'me_api_keys_update', valid: (s) => ({ keyId: s.workKeyId, name: 'renamed key' }), invalid: (s) => ({ keyId: s.workKeyId, name: '' }) },
  {
    tool: 'me_api_keys_rotate',
    valid: (s) => ({ keyId: s.workKeyId }),
    invalid: (s) => ({ keyId: s.workKeyId }), // revoked by the rotation: 409
  },
  { tool: 'me_api_keys_revoked', valid: () => ({}), invalid: () => ({ limit: 0 }) },
  {
    tool: 'agent_keys_get',
    valid: (s) => ({ id: s.workAgentId, keyId: s.workAgentKeyId }),
    invalid: (s) => ({ id: s.workAgentId, keyId: `key_${Z26}` }),
  },
  {
    tool: 'agent_keys_update',
    valid: (s) => ({ id: s.workAgentId, keyId: s.workAgentKeyId, name: 'renamed agent key' }),
    invalid: (s) => ({ id: s.workAgentId, keyId: s.workAgentKeyId, name: '' }),
  },
];

const accountSteps: Step[] = [
  { tool: 'me_permissions', valid: () => ({}) },
  {
    tool: 'accounts_members_get',
    valid: (s) => ({ id: s.orgId, memberId: s.accountId }),
    invalid: (s) => ({ id: s.orgId, memberId: s.otherAccountId }),
  },
  {
    tool: 'accounts_audit_event',
    before: async (s, t, key) => {
      s.auditEventId = (await t.ok('GET', `/accounts/${s.accountId}/audit`, key)).body.events[0].id;
    },
    valid: (s) => ({ id: s.accountId, eventId: s.auditEventId }),
    invalid: (s) => ({ id: s.accountId, eventId: `evt_${Z26}` }),
  },
  { tool: 'hosts_get', valid: (s) => ({ hostId: s.hostId }), invalid: () => ({ hostId: `host_${Z26}` }) },
  { tool: 'hosts_rename', valid: (s) => ({ hostId: s.hostId, name: `laptop ${s.run}` }), invalid: (s) => ({ hostId: s.hostId, name: '' }) },
];

export const STEPS: Step[] = [...threadSteps, ...agentSteps, ...keySteps, ...accountSteps];
