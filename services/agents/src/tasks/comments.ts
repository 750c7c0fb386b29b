import { z } from 'zod';

import { actorOf, DomainError, newId, parseInput, type Principal, type Queryable } from '@svc/kit';

import type { CommentRow } from './store.js';
import { clamp, idCursor, readId, type TasksDomain } from './tasks.js';

/** Comments on tasks (docs/memory.md): anyone of the account writes one; only its author edits or deletes it. */

const COMMENT_RE = /^tcm_[0-9a-z]{26}$/;
const commentNotFound = () => new DomainError('not_found', 'comment_not_found', 'Comment not found.');
const Body = z.string().trim().min(1, 'must not be empty').max(10_000, 'must be at most 10000 characters');

export class TaskComments {
  constructor(private readonly d: TasksDomain) {}

  async comments(p: Principal, taskId: string, limit?: number, cursor?: string) {
    const t = await this.d.get(p, taskId);
    const n = clamp(limit, 50, 200);
    const rows = await this.d.store.comments(t.id, readId(cursor, COMMENT_RE), n + 1);
    const page = rows.slice(0, n);
    return { rows: page, nextCursor: rows.length > n ? idCursor(page[page.length - 1]!.id) : undefined };
  }

  async comment(p: Principal, taskId: string, body: string): Promise<CommentRow> {
    const text = parseInput(Body, body, { where: 'body' });
    return this.d.tx(async (q) => {
      const t = await this.d.get(p, taskId, q, true);
      const c = await this.d.store.insertComment(q, { id: newId('tcm'), task_id: t.id, body: text, author: actorOf(p) });
      await this.d.log(q, t.id, 'comment.created', { commentId: c.id }, actorOf(p));
      return c;
    });
  }

  /** A comment of a visible task that the caller wrote (editing another's is 403). */
  private async ownComment(p: Principal, q: Queryable, taskId: string, commentId: string): Promise<CommentRow> {
    await this.d.get(p, taskId, q, true);
    const c = COMMENT_RE.test(commentId) ? await this.d.store.comment(q, taskId, commentId) : null;
    if (!c) throw commentNotFound();
    const me = actorOf(p);
    if (c.author.kind !== me.kind || c.author.id !== me.id) {
      throw new DomainError('forbidden', 'not_comment_author', 'Only its author may change or delete a comment.');
    }
    return c;
  }

  async editComment(p: Principal, taskId: string, commentId: string, body: string): Promise<CommentRow> {
    const text = parseInput(Body, body, { where: 'body' });
    return this.d.tx(async (q) => {
      const c = await this.ownComment(p, q, taskId, commentId);
      const next = await this.d.store.updateComment(q, c.id, text);
      await this.d.log(q, taskId, 'comment.updated', { commentId: c.id }, actorOf(p));
      return next;
    });
  }

  async deleteComment(p: Principal, taskId: string, commentId: string): Promise<number> {
    return this.d.tx(async (q) => {
      await this.d.get(p, taskId, q, true);
      if (COMMENT_RE.test(commentId) && !(await this.d.store.comment(q, taskId, commentId))) return 0;
      const c = await this.ownComment(p, q, taskId, commentId);
      await this.d.store.deleteComment(q, c.id);
      await this.d.log(q, taskId, 'comment.deleted', { commentId: c.id }, actorOf(p));
      return 1;
    });
  }
}
