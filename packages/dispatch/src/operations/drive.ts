import { driveItem, reply, type RouteInput } from '@svc/api';
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import { contentAnswer } from '../answers.js';
import { type ContentDeps, download, upload } from '../content.js';
import type { OperationContext, OperationHandler } from '../dispatcher.js';
import { driveCodeOperations, type RunCodeFn } from './drive-code.js';

const FOLDER_ID_RE = /^fld_[0-9a-z]{26}$/;

function itemReply(item: drive.Item, status: number) {
  const headers: Record<string, string> = { ETag: item.etag };
  if (status === 201) headers.Location = `/v1/drive/${item.id}`;
  return reply(driveItem(item), { status, headers });
}

const preconditions = (input: RouteInput) => ({
  ifMatch: input.headers['if-match'] as string | undefined,
  ifNoneMatch: input.headers['if-none-match'] as string | undefined,
});
/** The parts of the drive's content operations' input their schemas parse as text (a query's names, a path's id, a read's headers). */
const text = (part: Record<string, unknown>, name: string) => part[name] as string | undefined;

const callerOf = (ctx: OperationContext) => ({ token: ctx.auth!.token, requestId: ctx.requestId, principal: ctx.auth!.principal });

/** The drive's content operations: bytes in and out, streamed between the caller and the blob store. */
export function driveOperations(deps: ContentDeps & { runCode?: RunCodeFn }): Record<string, OperationHandler> {
  /** POST /drive/upload: the raw body with `?name=`, or a form's file part (its name and fields). */
  const uploadFile: OperationHandler = async (input, ctx) => {
    const content = input.content!;
    const header: drive.UploadHeader = {
      parentId: text(input.query, 'parentId'),
      name: text(input.query, 'name'),
      projectId: text(input.query, 'projectId'),
      ...preconditions(input),
      requirePrecondition: false,
      overwrite: false,
      lockTokens: [],
      contentType: content.type,
    };
    if (content.filename !== undefined) {
      const fields = content.fields;
      header.name = text(input.query, 'name') ?? fields.name ?? content.filename;
      header.parentId = text(input.query, 'parentId') ?? (fields.parentId || undefined);
      header.projectId = text(input.query, 'projectId') ?? (fields.projectId || undefined);
      if (header.parentId !== undefined && !FOLDER_ID_RE.test(header.parentId)) {
        throw new DomainError('invalid_argument', 'invalid_request', 'parentId: must be a folder id (fld_…)');
      }
    } else {
      if (!input.query.name) throw new DomainError('invalid_argument', 'invalid_request', 'query.name: a file name is required (?name=).');
      header.declaredSize = content.length;
    }
    const result = await upload(deps, callerOf(ctx), header, content.stream);
    return itemReply(result.item!, result.created ? 201 : 200);
  };

  /** PUT /drive/:id/content: new content for a file, only over the version the caller read. */
  const replaceFile: OperationHandler = async (input, ctx) => {
    const content = input.content!;
    const result = await upload(
      deps,
      callerOf(ctx),
      {
        itemId: text(input.params, 'id'),
        contentType: content.type,
        declaredSize: content.length,
        ...preconditions(input),
        requirePrecondition: true,
        overwrite: false,
        lockTokens: [],
      },
      content.stream,
    );
    return itemReply(result.item!, 200);
  };

  /** GET /drive/:id/content: the bytes (a range of them), or 304/416 as the headers ask. */
  const readFile: OperationHandler = async (input, ctx) => {
    const d = await download(deps, callerOf(ctx), {
      id: text(input.params, 'id')!,
      range: text(input.headers, 'range'),
      ifNoneMatch: text(input.headers, 'if-none-match'),
      ifRange: text(input.headers, 'if-range'),
      headOnly: ctx.head ?? false,
    });
    return contentAnswer(d);
  };

  return { 'drive.upload': uploadFile, 'drive.replace': replaceFile, 'drive.read': readFile, ...driveCodeOperations(deps) };
}
