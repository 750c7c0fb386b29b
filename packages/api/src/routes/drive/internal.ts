import type { Effect } from '../../route.js';
import { internalRoute } from '../internal.js';

/** A call of WebDAV or Git: people and agents (not hosts), as DAV_ACCESS and GIT_ACCESS say. */
const front = (method: DriveInternalMethod, effect: Effect, summary: string, deadlineMs?: number) =>
  internalRoute('drive', method, { summary, effect, principals: ['human', 'agent'], deadlineMs });
/** A call of public sites: as the platform itself (the system principal), which no key acts as. */
const sites = (method: DriveInternalMethod, summary: string) => internalRoute('drive', method, { summary, effect: 'reads', principals: [] });

/**
 * The drive calls of the protocol fronts (WebDAV at /dav, Git at /git, public sites), as internal
 * operations: the fronts invoke them through the dispatcher, so the principal rules and the
 * authority test cover them as they do the API's.
 */
export const driveInternalRoutes = [
  front('resolvePath', 'reads', 'WebDAV: the item at a path (with its locks and properties), or its parent.'),
  front('listItems', 'reads', 'WebDAV: a page of a folder (PROPFIND, GET of a collection).'),
  front('setProperties', 'updates', 'WebDAV PROPPATCH: custom properties.'),
  front('createFolder', 'creates', 'WebDAV MKCOL.'),
  front('deleteItem', 'deletes', 'WebDAV DELETE.'),
  front('updateItem', 'overwrites', 'WebDAV MOVE (Overwrite: T replaces what is there).'),
  front('copyItem', 'overwrites', 'WebDAV COPY (Overwrite: T replaces what is there).'),
  front('lockItem', 'updates', 'WebDAV LOCK: a new lock, a refresh, a lock-null item.'),
  front('unlockItem', 'updates', 'WebDAV UNLOCK.'),
  front('getSite', 'reads', "Git: the site a repository's URL names (by id or slug)."),
  front('getDeployment', 'reads', "Git: the deployment a site's main holds."),
  // What deploying through the API is (sites.deploy); a push of many files may take a while.
  front('deploySite', 'creates', 'Git push: a deployment of the pushed tree.', 120_000),
  sites('openSiteFile', "Public sites: a file of a site's live deployment."),
  sites('resolveSiteDomain', 'Public sites: whether the drive serves a host name as a custom domain.'),
];

/** The drive methods the protocol fronts call (an internal client's). */
export type DriveInternalMethod =
  | 'resolvePath'
  | 'listItems'
  | 'setProperties'
  | 'createFolder'
  | 'deleteItem'
  | 'updateItem'
  | 'copyItem'
  | 'lockItem'
  | 'unlockItem'
  | 'getSite'
  | 'getDeployment'
  | 'deploySite'
  | 'openSiteFile'
  | 'resolveSiteDomain';
