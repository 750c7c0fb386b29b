import busboy from 'busboy';
import type { Request } from 'express';

import type { Content, ContentBody } from '@svc/api';
import { DomainError } from '@svc/kit';

import { bodyOf, declaredLength, meaningfulType } from './content.js';

/** Form fields kept before the file part, and the most characters one may hold. */
const MAX_FIELDS = 20;
const MAX_FIELD_CHARS = 4096;

const malformed = (why: string) => new DomainError('invalid_argument', 'invalid_multipart', `The multipart body is malformed: ${why}.`);

/**
 * A request's content as an operation takes it (`Route.content`): a multipart/form-data body
 * (where the route takes one) is read up to its first file part, whose bytes then stream; any
 * other body is the bytes themselves.
 */
export function readContent(req: Request, declared: ContentBody): Promise<Content> {
  const type = req.headers['content-type'];
  if (declared.kinds.includes('multipart') && typeof type === 'string' && /^\s*multipart\/form-data\b/i.test(type)) return readForm(req);
  return Promise.resolve({
    stream: bodyOf(req),
    type: meaningfulType(typeof type === 'string' ? type : undefined),
    length: declaredLength(req),
    fields: {},
  });
}

/**
 * Reads a form with busboy: the fields before the first file part, then that part's bytes as a
 * stream. The bytes count only when the form ends well: a body cut short (or malformed after the
 * file) fails the stream, so the upload is forgotten rather than stored short.
 */
function readForm(req: Request): Promise<Content> {
  return new Promise<Content>((resolve, reject) => {
    let form: busboy.Busboy;
    try {
      form = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: { files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_CHARS + 1, parts: 100, headerPairs: 100 },
      });
    } catch (err) {
      reject(malformed((err as Error).message.replace(/^Multipart: /, '').toLowerCase()));
      return;
    }
    const fields: Record<string, string> = {};
    let found = false;
    let failure: DomainError | undefined;
    let finished = false;
    const waiters: Array<() => void> = [];
    const settle = (err?: DomainError) => {
      if (finished) return;
      finished = true;
      failure = err;
      for (const w of waiters.splice(0)) w();
      if (!found) reject(err ?? new DomainError('invalid_argument', 'missing_file', 'The form has no file part.'));
    };
    form.on('field', (name, value, info) => {
      if (found) return;
      if (info.valueTruncated || value.length > MAX_FIELD_CHARS) return settle(malformed('a field is too long'));
      fields[name] = value;
    });
    form.on('file', (_name, file, info) => {
      if (found || finished) return void file.resume();
      found = true;
      const formEnded = () =>
        new Promise<void>((ok, fail) => {
          const check = () => (failure ? fail(failure) : ok());
          if (finished) check();
          else waiters.push(check);
        });
      async function* bytes(): AsyncGenerator<Buffer> {
        try {
          for await (const chunk of file) yield chunk as Buffer;
        } catch {
          throw failure ?? malformed('cut in a part');
        }
        await formEnded();
      }
      resolve({ stream: bytes(), type: meaningfulType(info.mimeType), filename: info.filename ?? '', fields });
    });
    form.on('error', (err: Error) => settle(malformed(err.message.replace(/^Multipart: /, '').toLowerCase())));
    form.on('close', () => settle());
    req.on('close', () => {
      if (!req.complete) form.destroy(new Error('the request was aborted'));
    });
    req.pipe(form);
  });
}
