import type { Migration } from '@svc/kit';

/**
 * One row per profile; versions are immutable rows; snapshots are stored as content-addressed
 * chunks of items (shared by every version that holds them), so 1,000 versions of a 10k-item
 * profile cost the items that changed, not 1,000 copies.
 */
export const migrations: Migration[] = [
  {
    id: '0001_profiles',
    sql: `
      CREATE TABLE profiles.profiles (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        project_id text,
        name text NOT NULL,
        current_branch_id text NOT NULL,
        working jsonb NOT NULL,
        rev bigint NOT NULL DEFAULT 1,
        next_seq integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX profiles_by_account ON profiles.profiles (account_id, id);

      CREATE TABLE profiles.branches (
        profile_id text NOT NULL REFERENCES profiles.profiles (id) ON DELETE CASCADE,
        id text NOT NULL,
        name text NOT NULL,
        description text,
        head_version_id text,
        base_version_id text,
        parent_branch_id text,
        pos integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (profile_id, id)
      );

      CREATE TABLE profiles.versions (
        profile_id text NOT NULL REFERENCES profiles.profiles (id) ON DELETE CASCADE,
        id text NOT NULL,
        seq integer NOT NULL,
        branch_id text NOT NULL,
        parent_version_id text,
        merge_parent_id text,
        message text NOT NULL,
        created_at timestamptz NOT NULL,
        manifest jsonb NOT NULL,
        snapshot_bytes integer NOT NULL,
        PRIMARY KEY (profile_id, id)
      );
      CREATE UNIQUE INDEX versions_by_seq ON profiles.versions (profile_id, seq);

      CREATE TABLE profiles.chunks (
        profile_id text NOT NULL REFERENCES profiles.profiles (id) ON DELETE CASCADE,
        hash text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (profile_id, hash)
      );`,
  },
  {
    // Who made each version (shown as the author of its commit by the Git front, docs/git.md):
    // {kind, id, keyId}; null for versions written before this column.
    id: '0002_version_authors',
    sql: `ALTER TABLE profiles.versions ADD COLUMN created_by jsonb;`,
  },
  {
    // Tags: names for versions (releases, milestones), unique per profile (docs/profiles.md).
    id: '0003_tags',
    sql: `
      CREATE TABLE profiles.tags (
        profile_id text NOT NULL REFERENCES profiles.profiles (id) ON DELETE CASCADE,
        name text NOT NULL,
        version_id text NOT NULL,
        message text,
        created_by jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (profile_id, name)
      );`,
  },
];
