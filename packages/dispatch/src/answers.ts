import { type HttpReply, isReply } from '@svc/api';

import type { Download } from './content.js';

/** A file's content as an answer (`answer: 'bytes'`): what to send, and the bytes. */
export interface ContentAnswer {
  readonly $content: true;
  download: Download;
}

/** One server-sent event: its id (what a client resumes after), its type, and its data (JSON). */
export interface StreamEvent {
  id?: string;
  event?: string;
  data: unknown;
}

/**
 * A stream of events as an answer (a route that declares `events`, asked for the stream): the
 * front writes each as it comes and stops the iterator (its `finally` runs) when the client leaves.
 */
export interface EventsAnswer {
  readonly $events: true;
  events: AsyncIterable<StreamEvent>;
}

export const contentAnswer = (download: Download): ContentAnswer => ({ $content: true, download });
export const eventsAnswer = (events: AsyncIterable<StreamEvent>): EventsAnswer => ({ $events: true, events });

/** What takes an answer's headers: an HTTP response (node's and express's have this method). */
export interface HeaderSink {
  setHeader(name: string, value: string): unknown;
}

/** What an operation answered, for a front to write in its own protocol. */
export type Answer =
  | { kind: 'json'; status: number; headers: Readonly<Record<string, string>>; body: unknown; text?: string }
  | { kind: 'content'; download: Download }
  | { kind: 'events'; events: AsyncIterable<StreamEvent> };

const marked = (v: unknown, mark: string) => typeof v === 'object' && v !== null && (v as Record<string, unknown>)[mark] === true;

/** An operation's result (a JSON body, a reply, content, events) as an Answer. */
export function answerOf(out: unknown, status: number, headers: Readonly<Record<string, string>>): Answer {
  if (marked(out, '$content')) return { kind: 'content', download: (out as ContentAnswer).download };
  if (marked(out, '$events')) return { kind: 'events', events: (out as EventsAnswer).events };
  if (isReply(out)) {
    const r = out as HttpReply;
    const merged = !r.headers ? headers : headers === r.headers || Object.keys(headers).length === 0 ? r.headers : { ...headers, ...r.headers };
    return { kind: 'json', status: r.status ?? status, headers: merged, body: r.body, text: r.json };
  }
  return { kind: 'json', status, headers, body: out };
}
