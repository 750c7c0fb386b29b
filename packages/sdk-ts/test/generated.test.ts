import { execFile } from 'node:child_process';
import path from 'node:path';

import { routes } from '@svc/api';
import { Svc } from '@svc/sdk';
import { operations } from '@svc/sdk';

const root = path.resolve(__dirname, '../../..');

describe('the SDKs’ generated operation tables', () => {
  test('are current: regenerating from the route table’s OpenAPI document changes nothing (TypeScript types, tables, Python)', async () => {
    const out = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, [path.join(root, 'scripts/sdk-generate.mjs'), '--check'], { timeout: 120_000 }, (err, _stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(out).toEqual({ code: 0, stderr: '' });
  }, 120_000);

  test('hold every operation that does not change authority, and none that does', () => {
    const ids = Object.keys(operations).sort();
    expect(ids).toEqual(
      routes
        .filter((r) => !r.authority)
        .map((r) => r.id)
        .sort(),
    );
    const authority = routes.filter((r) => r.authority).map((r) => r.id);
    expect(authority).toEqual(expect.arrayContaining(['grants.create', 'hosts.pair', 'credits.grant', 'accounts.members.add']));
    for (const id of authority) expect(ids).not.toContain(id);
  });

  test('no method of the client creates or widens a grant', () => {
    const svc = new Svc({ apiKey: 'svc_' + '0'.repeat(64), baseUrl: 'http://127.0.0.1:9' }) as any;
    const methods: string[] = [];
    const walk = (node: any, prefix: string) => {
      for (const [k, v] of Object.entries(node)) {
        if (typeof v === 'function') methods.push(prefix + k);
        if (typeof v === 'object' && v !== null && k !== 'config') walk(v, `${prefix}${k}.`);
      }
    };
    walk(svc, '');
    expect(methods.length).toBeGreaterThan(60);
    for (const absent of [
      'grants.create',
      'grants.delete',
      'hosts.pair',
      'hosts.unpair',
      'credits.grant',
      'providerKeys.set',
      'trading.limits.set',
    ]) {
      expect(methods).not.toContain(absent);
    }
    expect(methods.filter((m) => /grant/i.test(m)).sort()).toEqual(['grants.held', 'grants.list']);
    expect(svc.grants.create).toBeUndefined();
    expect(svc.hosts.pair).toBeUndefined();
  });
});
