import type { Queryable, Sql } from '@svc/kit';

import type { Chunk, Manifest } from './snapshots.js';

export const SCHEMA = 'profiles';

export interface ProfileRow {
  id: string;
  account_id: string;
  project_id: string | null;
  name: string;
  current_branch_id: string;
  working: Record<string, unknown>;
  rev: number;
  next_seq: number;
  created_at: Date;
  updated_at: Date;
}

export interface BranchRow {
  id: string;
  name: string;
  description: string | null;
  head_version_id: string | null;
  /** Where the branch started (its parent's head then); null for main. */
  base_version_id: string | null;
  parent_branch_id: string | null;
  pos: number;
  created_at: Date;
}

export interface VersionRow {
  id: string;
  seq: number;
  branch_id: string;
  parent_version_id: string | null;
  /** The source head a merge version took in (internal: it keeps later merge bases right). */
  merge_parent_id: string | null;
  message: string;
  created_at: Date;
  snapshot_bytes: number;
  /** Who made it ({kind, id, keyId}); null for versions written before this was kept. */
  created_by: VersionAuthor | null;
}

export interface VersionAuthor {
  kind: string;
  id: string;
  keyId: string | null;
}

export interface NewVersion {
  id: string;
  seq: number;
  branch_id: string;
  parent_version_id: string | null;
  merge_parent_id: string | null;
  message: string;
  created_at: Date;
  manifest: Manifest;
  snapshot_bytes: number;
  created_by: VersionAuthor | null;
}

export interface SummaryRow extends ProfileRow {
  version_count: number;
  branch_count: number;
}

const PROFILE_COLUMNS = 'id, account_id, project_id, name, current_branch_id, working, rev, next_seq, created_at, updated_at';
const BRANCH_COLUMNS = 'id, name, description, head_version_id, base_version_id, parent_branch_id, pos, created_at';
const VERSION_COLUMNS = 'id, seq, branch_id, parent_version_id, merge_parent_id, message, created_at, snapshot_bytes, created_by';

const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);

/** Who may see a profile: its account, and within a project-scoped key, its project. */
export interface Scope {
  accountId: string;
  projectId?: string;
}

/** SQL for profiles. Rules live in profiles/ and history.ts. */
export class ProfileStore {
  constructor(private readonly sql: Sql) {}

  async insertProfile(
    q: Queryable,
    p: { id: string; account_id: string; project_id: string | null; name: string; working: unknown },
  ): Promise<ProfileRow> {
    const rows = await q.query<ProfileRow>(
      `INSERT INTO profiles.profiles (id, account_id, project_id, name, current_branch_id, working)
       VALUES ($1, $2, $3, $4, 'main', $5) RETURNING ${PROFILE_COLUMNS}`,
      [p.id, p.account_id, p.project_id, p.name, JSON.stringify(p.working)],
    );
    await q.query(`INSERT INTO profiles.branches (profile_id, id, name, pos, created_at) VALUES ($1, 'main', 'main', 0, $2)`, [
      p.id,
      rows[0]!.created_at,
    ]);
    return fixProfile(rows[0]!);
  }

  /** The profile if the scope may see it; `lock` takes the row lock for a compare-and-swap. */
  async profile(q: Queryable, id: string, scope: Scope, lock = false): Promise<ProfileRow | null> {
    const params: unknown[] = [id, scope.accountId];
    let where = 'id = $1 AND account_id = $2';
    if (scope.projectId) where += ` AND project_id = $${params.push(scope.projectId)}`;
    const rows = await q.query<ProfileRow>(`SELECT ${PROFILE_COLUMNS} FROM profiles.profiles WHERE ${where}${lock ? ' FOR UPDATE' : ''}`, params);
    return rows[0] ? fixProfile(rows[0]) : null;
  }

  async list(f: Scope & { before?: string; limit: number }): Promise<SummaryRow[]> {
    const params: unknown[] = [f.accountId];
    let where = 'p.account_id = $1';
    if (f.projectId) where += ` AND p.project_id = $${params.push(f.projectId)}`;
    if (f.before) where += ` AND p.id < $${params.push(f.before)}`;
    params.push(f.limit);
    const rows = await this.sql.query<SummaryRow>(
      `SELECT ${PROFILE_COLUMNS.split(', ')
        .map((c) => `p.${c}`)
        .join(', ')},
              (SELECT count(*)::int FROM profiles.versions v WHERE v.profile_id = p.id) AS version_count,
              (SELECT count(*)::int FROM profiles.branches b WHERE b.profile_id = p.id) AS branch_count
         FROM profiles.profiles p WHERE ${where} ORDER BY p.id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({ ...fixProfile(r), version_count: Number(r.version_count), branch_count: Number(r.branch_count) }));
  }

  async branches(q: Queryable, profileId: string): Promise<BranchRow[]> {
    return q.query<BranchRow>(`SELECT ${BRANCH_COLUMNS} FROM profiles.branches WHERE profile_id = $1 ORDER BY pos, id`, [profileId]);
  }

  /** Versions in commit order, from sequence number `fromSeq` on. */
  async versions(q: Queryable, profileId: string, fromSeq = 0): Promise<VersionRow[]> {
    const rows = await q.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM profiles.versions WHERE profile_id = $1 AND seq >= $2 ORDER BY seq`, [
      profileId,
      fromSeq,
    ]);
    for (const r of rows) r.snapshot_bytes = Number(r.snapshot_bytes);
    return rows;
  }

  async manifests(q: Queryable, profileId: string, ids: string[]): Promise<Map<string, Manifest>> {
    const out = new Map<string, Manifest>();
    if (!ids.length) return out;
    const rows = await q.query<{ id: string; manifest: unknown }>(
      `SELECT id, manifest FROM profiles.versions WHERE profile_id = $1 AND id = ANY($2::text[])`,
      [profileId, ids],
    );
    for (const r of rows) out.set(r.id, json(r.manifest) as Manifest);
    return out;
  }

  async chunks(q: Queryable, profileId: string, hashes: string[]): Promise<Chunk[]> {
    if (!hashes.length) return [];
    return q.query<Chunk>(`SELECT hash, body FROM profiles.chunks WHERE profile_id = $1 AND hash = ANY($2::text[])`, [profileId, hashes]);
  }

  async insertChunks(q: Queryable, profileId: string, chunks: Chunk[]): Promise<void> {
    if (!chunks.length) return;
    await q.query(
      `INSERT INTO profiles.chunks (profile_id, hash, body)
       SELECT $1, h, b FROM unnest($2::text[], $3::text[]) AS u(h, b)
       ON CONFLICT DO NOTHING`,
      [profileId, chunks.map((c) => c.hash), chunks.map((c) => c.body)],
    );
  }

  async insertVersions(q: Queryable, profileId: string, vs: NewVersion[]): Promise<void> {
    if (!vs.length) return;
    await q.query(
      `INSERT INTO profiles.versions (profile_id, id, seq, branch_id, parent_version_id, merge_parent_id, message, created_at,
         manifest, snapshot_bytes, created_by)
       SELECT $1, id, seq, branch_id, parent_version_id, merge_parent_id, message, created_at, manifest::jsonb, snapshot_bytes,
              created_by::jsonb
         FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::int[],
                     $11::text[])
           AS u(id, seq, branch_id, parent_version_id, merge_parent_id, message, created_at, manifest, snapshot_bytes, created_by)`,
      [
        profileId,
        vs.map((v) => v.id),
        vs.map((v) => v.seq),
        vs.map((v) => v.branch_id),
        vs.map((v) => v.parent_version_id),
        vs.map((v) => v.merge_parent_id),
        vs.map((v) => v.message),
        vs.map((v) => v.created_at.toISOString()),
        vs.map((v) => JSON.stringify(v.manifest)),
        vs.map((v) => v.snapshot_bytes),
        vs.map((v) => (v.created_by ? JSON.stringify(v.created_by) : null)),
      ],
    );
  }

  /** Makes the stored branches exactly `branches` (in that order). */
  async saveBranches(q: Queryable, profileId: string, branches: Array<Omit<BranchRow, 'pos'>>): Promise<void> {
    await q.query(`DELETE FROM profiles.branches WHERE profile_id = $1 AND NOT (id = ANY($2::text[]))`, [profileId, branches.map((b) => b.id)]);
    await q.query(
      `INSERT INTO profiles.branches
         (profile_id, id, name, description, head_version_id, base_version_id, parent_branch_id, pos, created_at)
       SELECT $1, id, name, description, head, base, parent, pos, created_at
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::timestamptz[])
           AS u(id, name, description, head, base, parent, pos, created_at)
       ON CONFLICT (profile_id, id) DO UPDATE SET
         name = EXCLUDED.name, description = EXCLUDED.description, head_version_id = EXCLUDED.head_version_id,
         base_version_id = EXCLUDED.base_version_id, parent_branch_id = EXCLUDED.parent_branch_id, pos = EXCLUDED.pos`,
      [
        profileId,
        branches.map((b) => b.id),
        branches.map((b) => b.name),
        branches.map((b) => b.description),
        branches.map((b) => b.head_version_id),
        branches.map((b) => b.base_version_id),
        branches.map((b) => b.parent_branch_id),
        branches.map((_, i) => i),
        branches.map((b) => b.created_at.toISOString()),
      ],
    );
  }

  /** Writes the profile row and bumps its revision (the ETag). */
  async updateProfile(
    q: Queryable,
    id: string,
    f: { name: string; current_branch_id: string; working: unknown; next_seq: number },
  ): Promise<ProfileRow> {
    const rows = await q.query<ProfileRow>(
      `UPDATE profiles.profiles
          SET name = $2, current_branch_id = $3, working = $4::jsonb, next_seq = $5, rev = rev + 1, updated_at = now()
        WHERE id = $1 RETURNING ${PROFILE_COLUMNS}`,
      [id, f.name, f.current_branch_id, JSON.stringify(f.working), f.next_seq],
    );
    return fixProfile(rows[0]!);
  }

  async deleteProfile(q: Queryable, id: string): Promise<void> {
    await q.query(`DELETE FROM profiles.profiles WHERE id = $1`, [id]);
  }

  // Tags -----------------------------------------------------------------------------------------

  async tags(q: Queryable, profileId: string): Promise<TagRow[]> {
    return q.query<TagRow>(
      `SELECT name, version_id, message, created_by, created_at FROM profiles.tags WHERE profile_id = $1 ORDER BY created_at, name`,
      [profileId],
    );
  }

  /** Inserts a tag; false when the name is taken. */
  async insertTag(q: Queryable, profileId: string, t: Omit<TagRow, 'created_at'>): Promise<TagRow | null> {
    const rows = await q.query<TagRow>(
      `INSERT INTO profiles.tags (profile_id, name, version_id, message, created_by) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (profile_id, name) DO NOTHING RETURNING name, version_id, message, created_by, created_at`,
      [profileId, t.name, t.version_id, t.message, JSON.stringify(t.created_by)],
    );
    return rows[0] ?? null;
  }

  async deleteTag(q: Queryable, profileId: string, name: string): Promise<boolean> {
    const rows = await q.query(`DELETE FROM profiles.tags WHERE profile_id = $1 AND name = $2 RETURNING name`, [profileId, name]);
    return rows.length > 0;
  }
}

function fixProfile<T extends ProfileRow>(r: T): T {
  return { ...r, working: json(r.working) as Record<string, unknown>, rev: Number(r.rev), next_seq: Number(r.next_seq) };
}

export interface TagRow {
  name: string;
  version_id: string;
  message: string | null;
  created_by: VersionAuthor | null;
  created_at: Date;
}
