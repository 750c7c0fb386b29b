/**
 * The protocol fronts' one entry on the app. A request goes to the fronts that claim it (by the
 * first segment of its path, or by its host name), in the order they were added, and on to the
 * API when none of them answers it. A front is an express Router of its own, so it keeps express's
 * routing (a mounted path, methods, case-insensitive matching) inside its part of the paths.
 *
 * Why one entry: with each front a layer of the app, every API request passed through all of
 * them (their route matching and path tests). Measured on `GET /me`, embedded backends, two
 * stacks in one run: the fronts' layers were 10–20% of its CPU.
 */
import express, { type Request, type RequestHandler } from 'express';

export interface FrontClaim {
  /** The first path segments it answers on, lowercase (after the gateway took off `/v1`). */
  segments: readonly string[];
  /**
   * Of the requests on those segments, the ones it answers (absent: all of them). A front shares
   * its segment with API routes (sites, hosts): those go straight on, without a pass through the
   * front's router (a router hands a request it does not answer back a turn of the event loop later).
   */
  path?: (req: Request) => boolean;
  /** Whether a request's host is the front's whatever its path (a site's own host name). */
  host?: (req: Request) => boolean;
}

/** The first segment of a path, lowercase: `/DAV/a/b` → `dav`, `/` → ``. */
export function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return (end === -1 ? path.slice(1) : path.slice(1, end)).toLowerCase();
}

export class Fronts {
  private readonly fronts: { segments: Set<string>; claim: FrontClaim; router: express.Router }[] = [];

  /** A new front: the router its routes go on, entered only for the requests the claim names. */
  add(claim: FrontClaim): express.Router {
    const router = express.Router();
    this.fronts.push({ segments: new Set(claim.segments), claim, router });
    return router;
  }

  /** The app's middleware: each claiming front in turn, then the next layer (the API). */
  handler(): RequestHandler {
    const fronts = this.fronts;
    return (req, res, next) => {
      const segment = firstSegment(req.path);
      let i = 0;
      const step = (err?: unknown): void => {
        if (err) return next(err);
        while (i < fronts.length) {
          const front = fronts[i++]!;
          const { path, host } = front.claim;
          if ((front.segments.has(segment) && (!path || path(req))) || host?.(req)) return void front.router(req, res, step);
        }
        next();
      };
      step();
    };
  }
}
