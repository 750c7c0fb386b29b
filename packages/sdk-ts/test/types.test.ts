import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import ts from 'typescript';

/** The SDK's types as a user's compiler sees them (its published declarations): precise inputs and answers, no grant methods. */

const DIST = path.resolve(__dirname, '../dist/index.js');

function typeCheck(source: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sdk-types-'));
  try {
    const file = path.join(dir, 'check.mts');
    fs.writeFileSync(file, source.replace(/@svc\/sdk/g, DIST));
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts', 'lib.dom.asynciterable.d.ts'],
      types: [],
      skipLibCheck: true,
    };
    const program = ts.createProgram([file], options);
    return ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), ts.createCompilerHost(options));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('inputs and answers are typed from the OpenAPI document; authority operations do not exist', () => {
  const check = `
    import { Svc, type components } from '@svc/sdk';
    type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
    const expectTrue = <T extends true>(): T | undefined => undefined;
    export async function use(svc: Svc) {
      const thread = await svc.threads.create({ title: 't', message: 'hello' });
      expectTrue<Equal<typeof thread, components['schemas']['CreatedThread']>>();
      const injected = await svc.threads.inject({ id: thread.id, content: 'more' }); // mode has a default: optional
      expectTrue<Equal<typeof injected.status, 'started' | 'pending' | 'queued' | 'answered'>>();
      for await (const item of svc.drive.list.all({ limit: 10 })) expectTrue<Equal<typeof item, components['schemas']['DriveItem']>>();
      for await (const e of svc.threads.events.stream({ id: thread.id })) expectTrue<Equal<typeof e.data, components['schemas']['ThreadEvent']>>();
      const file = await svc.drive.read({ id: 'file_x', ifNoneMatch: '"e"', range: 'bytes=0-9' });
      expectTrue<Equal<typeof file.etag, string | undefined>>();
      await svc.drive.upload({ name: 'a', content: new Uint8Array(1), ifNoneMatch: '*' });
      await svc.models.list();
      // @ts-expect-error: a path parameter is required
      await svc.threads.get({});
      // @ts-expect-error: a field of the wrong type
      await svc.threads.create({ title: 1 });
      // @ts-expect-error: not a list
      svc.threads.get.all;
      // @ts-expect-error: grants are created by a person through the API, never by the SDK
      svc.grants.create;
      // @ts-expect-error
      svc.hosts.pair;
      // @ts-expect-error
      svc.credits.grant;
    }
  `;
  expect(typeCheck(check)).toBe('');
}, 60_000);
