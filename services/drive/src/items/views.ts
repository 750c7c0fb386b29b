/** Items and locks as the drive's messages carry them. */
import type { drive } from '@svc/proto';

import { etagOf } from './rules.js';
import type { Actor, LockRow } from './store.js';
import type { ItemView } from './types.js';

const actor = (a: Actor): drive.Actor => ({ kind: a.kind, id: a.id, keyId: a.keyId ?? undefined });

export function toLock(l: LockRow & { rootPath: string }): drive.Lock {
  return {
    token: l.token,
    rootId: l.item_id,
    rootPath: l.rootPath,
    scope: l.scope,
    deep: l.deep,
    owner: l.owner_xml,
    timeoutSeconds: l.timeout_seconds,
    expiresAt: l.expires_at.toISOString(),
    holder: actor(l.holder),
  };
}

export function toItem(v: ItemView): drive.Item {
  const r = v.row;
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    parentId: r.parent_id ?? undefined,
    projectId: r.project_id ?? undefined,
    size: r.size,
    contentType: r.content_type ?? undefined,
    sha256: r.sha256 ?? undefined,
    etag: etagOf(r),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    createdBy: actor(r.created_by),
    updatedBy: actor(r.updated_by),
    locks: (v.locks ?? []).map(toLock),
    properties: (v.props ?? []).map((x) => ({ ns: x.ns, name: x.name, xml: x.xml })),
    path: v.path,
  };
}
