import { z } from 'zod';

/**
 * A thread's message fields as the API takes them (docs/threads.md), declared once: the route table
 * validates requests with them and the agents service validates its gRPC input with the same ones.
 */

export const THREAD_MESSAGE_MODES = ['boundary', 'interrupt', 'enqueue', 'reject', 'rollback'] as const;

/** What a message does to a run that works (POST /threads/:id/messages). */
export const ThreadMessageMode = z
  .enum(THREAD_MESSAGE_MODES, { error: 'must be boundary, interrupt, enqueue, reject or rollback' })
  .describe(
    'While a run works: boundary (default) delivers the message at its next step boundary; interrupt stops the current model turn or tool call and delivers it at once; enqueue starts a run with it after the current one; reject answers 409 thread_busy; rollback cancels the run, discards its progress (run.rolled_back) and starts a new run on the message.',
  );

/** The caller's idempotency key of a message: the same id again is one message. */
export const ClientMessageId = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .describe('Your idempotency key: sending the same id again is one message.');
