import type { TestStack } from './stack';
import { until } from './wait';

/**
 * Threads from outside (docs/threads.md), for the suites of approvals, message edits and the bench's
 * kin: people, a thread's events, waiting for an event or a run's end, a run paused for approval,
 * a drive file's content. Every helper takes the stack it works on.
 */

export const RUN_ENDS = ['run.completed', 'run.failed', 'run.cancelled'];
/** The development model's line that makes it call write_drive_file. */
export const WRITE = (name: string, content: string) => `/tool write_drive_file ${JSON.stringify({ name, content })}`;

export type Ev = { seq: number; type: string; data: any; runId: string | null; producer: any };

let n = 0;
export async function person(s: TestStack) {
  const res = await s.ok('POST', '/accounts', s.bootstrapKey, { kind: 'user', name: `person ${++n}` });
  return { id: res.body.account.id as string, key: res.body.key as string };
}

export async function events(s: TestStack, key: string, threadId: string): Promise<Ev[]> {
  const out: Ev[] = [];
  for (let a = 0; ;) {
    const res = await s.ok('GET', `/threads/${threadId}/events?after=${a}&limit=200`, key);
    out.push(...res.body.events);
    if (res.body.nextAfter === null) return out;
    a = res.body.nextAfter;
  }
}

/** The thread's events once `count` of them are of `type`. */
export const eventually = (s: TestStack, key: string, id: string, type: string, count = 1) =>
  until(async () => {
    const evs = await events(s, key, id);
    return evs.filter((e) => e.type === type).length >= count && evs;
  }, 30_000);

/** The thread's events once `runs` runs have ended. */
export const settled = (s: TestStack, key: string, id: string, runs = 1) =>
  until(async () => {
    const evs = await events(s, key, id);
    return evs.filter((e) => RUN_ENDS.includes(e.type)).length >= runs && evs;
  }, 30_000);

/** An agent whose write_drive_file calls need approval, and a thread paused on one. */
export async function paused(s: TestStack, key: string, message: string) {
  const agent = (await s.ok('POST', '/agents', key, { name: `agent ${++n}` })).body as { id: string };
  await s.ok('PUT', `/agents/${agent.id}/approval-policy`, key, { tools: ['write_drive_*'] });
  const created = (await s.ok('POST', '/threads', key, { agentId: agent.id, message })).body;
  const evs = await eventually(s, key, created.id, 'approval.requested');
  const requested = evs.find((e) => e.type === 'approval.requested')!;
  return { agentId: agent.id, threadId: created.id as string, runId: created.runId as string, approvalId: requested.data.approvalId as string, evs };
}

export async function driveFile(s: TestStack, key: string, name: string): Promise<string | null> {
  const items = (await s.ok('GET', '/drive', key)).body.items as { id: string; name: string }[];
  const item = items.find((i) => i.name === name);
  if (!item) return null;
  const res = await fetch(`${s.url}/drive/${item.id}/content`, { headers: { authorization: `Bearer ${key}` } });
  return res.text();
}
