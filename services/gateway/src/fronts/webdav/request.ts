/**
 * One WebDAV request once authenticated: who calls, what it names, and the steps every method
 * shares (resolving paths through the drive, evaluating the If header).
 */
import type { Request, Response } from 'express';

import { type Caller, type ContentDeps, type Dispatcher, type DriveCalls, driveCalls } from '@svc/dispatch';
import { DomainError } from '@svc/kit';
import type { drive } from '@svc/proto';

import type { Authenticator } from '../../auth.js';
import type { AuthContext } from '../../credentials.js';
import { type IfList, type IfState, listPasses, parseIfHeader, stateOf, submittedTokens } from './if-header.js';
import { hrefOf, segmentsOf, type Target } from './paths.js';

/** What the front needs: the authentication step, and what moving drive content needs. */
export interface DavDeps extends ContentDeps {
  auth: Authenticator;
  /** The process's dispatcher: the drive calls are its internal operations, made as the caller. */
  dispatcher: Dispatcher;
}

export class DavRequest {
  /** The drive's calls, as the caller (internal operations through the dispatcher). */
  readonly drive: DriveCalls;

  constructor(
    readonly deps: DavDeps,
    readonly req: Request,
    readonly res: Response,
    readonly auth: AuthContext,
    readonly target: Target,
  ) {
    this.drive = driveCalls(deps.dispatcher, { requestId: req.requestId, auth });
  }

  get caller(): Caller {
    return { token: this.auth.token, requestId: this.req.requestId, principal: this.auth.principal };
  }

  /** The item at a path (with its path, locks and custom properties), or its parent when it is missing. */
  async resolve(segments: string[]): Promise<drive.ResolvePathResponse> {
    return this.drive.resolvePath({ segments, includeDetails: true });
  }

  href(segments: string[], collection: boolean): string {
    return hrefOf(this.target.prefix, segments, collection);
  }

  /**
   * Evaluates the If header for the request URI (and tagged resources): 412 when no list holds.
   * Returns the submitted lock tokens, and the entity tag the passing list names for the
   * request URI (sent on as If-Match, so the write itself is a compare-and-swap).
   */
  async checkIf(state: IfState): Promise<{ tokens: string[]; etag?: string }> {
    const header = this.req.headers.if;
    if (typeof header !== 'string' || !header.trim()) return { tokens: [] };
    const lists = parseIfHeader(header);
    const own = this.href(this.target.segments, false).replace(/\/$/, '');
    const states = new Map<string, IfState>();
    let passed: IfList | undefined;
    for (const list of lists) {
      let s = state;
      if (list.resource !== undefined) {
        let segs: string[];
        try {
          const u = new URL(list.resource, `http://${this.req.headers.host ?? 'localhost'}`);
          segs = segmentsOf(u.pathname.replace(/^(\/v1)?\/dav/, ''));
        } catch {
          continue;
        }
        const key = segs.join('/');
        if (key !== this.target.segments.join('/')) {
          let st = states.get(key);
          if (!st) {
            const r = await this.resolve(segs);
            st = stateOf(r.item ?? undefined, r.parent ?? undefined);
            states.set(key, st);
          }
          s = st;
        }
      }
      if (listPasses(list, s)) {
        passed ??= list;
        if (list.resource === undefined || list.resource.replace(/\/$/, '').endsWith(own)) passed = list;
      }
    }
    if (!passed) throw new DomainError('precondition_failed', 'if_header_failed', 'The If header did not match.');
    const etag = passed.conditions.find((c) => c.etag && !c.not)?.etag;
    return { tokens: submittedTokens(lists), etag: passed.resource === undefined ? etag : undefined };
  }
}
