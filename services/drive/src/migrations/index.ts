import type { Migration } from '@svc/kit';

import { siteDomains } from './0006-site-domains.js';
import { siteDomainChecks } from './0007-site-domain-checks.js';
import { quotas } from './0008-quotas.js';
import { blobChecksums } from './0009-blob-checksums.js';
import { usage } from './0010-usage.js';

export const migrations: Migration[] = [
  {
    id: '0001_drive',
    sql: `
      -- Files and folders. A file's content is the blob of its sha256 in its account; its ETag is
      -- the quoted sha256. project_id NULL is the account's own drive; a project has its own tree.
      CREATE TABLE drive.items (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        project_id text,
        parent_id text REFERENCES drive.items (id),
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('file', 'folder')),
        size bigint NOT NULL DEFAULT 0,
        content_type text,
        sha256 text,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        created_by jsonb NOT NULL,
        updated_by jsonb NOT NULL,
        CHECK ((kind = 'file') = (sha256 IS NOT NULL))
      );
      -- One name per folder (and per drive root), the compare-and-swap of creating by name.
      CREATE UNIQUE INDEX items_name ON drive.items (account_id, COALESCE(project_id, ''), COALESCE(parent_id, ''), name);
      CREATE INDEX items_parent ON drive.items (parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX items_blob ON drive.items (account_id, sha256) WHERE sha256 IS NOT NULL;

      -- Content blobs, per account and sha256. held_until protects a blob from collection while
      -- an upload or copy is about to reference it, and for a grace period after it stops being
      -- referenced (readers still streaming it).
      CREATE TABLE drive.blobs (
        account_id text NOT NULL,
        sha256 text NOT NULL,
        size bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        held_until timestamptz NOT NULL,
        PRIMARY KEY (account_id, sha256)
      );
      CREATE INDEX blobs_held_until ON drive.blobs (held_until);

      -- Uploads in progress: a crashed one leaves its temporary blob to collect.
      CREATE TABLE drive.uploads (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        tmp_key text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now()
      );

      -- WebDAV dead properties: the property element, serialized.
      CREATE TABLE drive.props (
        item_id text NOT NULL REFERENCES drive.items (id) ON DELETE CASCADE,
        ns text NOT NULL,
        name text NOT NULL,
        xml text NOT NULL,
        PRIMARY KEY (item_id, ns, name)
      );

      -- WebDAV write locks.
      CREATE TABLE drive.locks (
        token text PRIMARY KEY,
        account_id text NOT NULL,
        item_id text NOT NULL REFERENCES drive.items (id) ON DELETE CASCADE,
        scope text NOT NULL CHECK (scope IN ('exclusive', 'shared')),
        deep boolean NOT NULL,
        owner_xml text NOT NULL DEFAULT '',
        timeout_seconds integer NOT NULL,
        expires_at timestamptz NOT NULL,
        holder jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX locks_item ON drive.locks (item_id);
      CREATE INDEX locks_expires ON drive.locks (expires_at);`,
  },
  {
    id: '0002_upload_placing',
    sql: `
      -- The content an open upload is placing: its blob is never collected while the upload is
      -- open (between the move to its content key and the commit that references it), whatever
      -- the grace period.
      ALTER TABLE drive.uploads ADD COLUMN sha256 text;
      CREATE INDEX uploads_placing ON drive.uploads (account_id, sha256) WHERE sha256 IS NOT NULL;`,
  },
  {
    id: '0003_sites',
    sql: `
      -- Hosted sites (docs/sites.md). The slug is the public URL's name: unique platform-wide.
      CREATE TABLE drive.sites (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        project_id text,
        slug text NOT NULL UNIQUE,
        title text NOT NULL DEFAULT '',
        current_deployment_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        created_by jsonb NOT NULL
      );
      CREATE INDEX sites_account ON drive.sites (account_id, id);

      -- Deployments never change once written: a deploy inserts one with its files and switches
      -- the site's current deployment in the same transaction.
      CREATE TABLE drive.site_deployments (
        id text PRIMARY KEY,
        site_id text NOT NULL REFERENCES drive.sites (id) ON DELETE CASCADE,
        account_id text NOT NULL,
        digest text NOT NULL,
        file_count integer NOT NULL,
        total_bytes bigint NOT NULL,
        source text NOT NULL CHECK (source IN ('folder', 'files', 'archive')),
        folder_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        created_by jsonb NOT NULL
      );
      CREATE INDEX site_deployments_site ON drive.site_deployments (site_id, id);
      ALTER TABLE drive.sites ADD FOREIGN KEY (current_deployment_id) REFERENCES drive.site_deployments (id);

      -- A deployment's manifest. Its content is the drive blob (account_id, sha256): the collector
      -- keeps a blob that a site file references, as it keeps one an item references.
      CREATE TABLE drive.site_files (
        deployment_id text NOT NULL REFERENCES drive.site_deployments (id) ON DELETE CASCADE,
        path text COLLATE "C" NOT NULL,
        account_id text NOT NULL,
        sha256 text NOT NULL,
        size bigint NOT NULL,
        content_type text NOT NULL,
        PRIMARY KEY (deployment_id, path)
      );
      CREATE INDEX site_files_blob ON drive.site_files (account_id, sha256);`,
  },
  {
    id: '0004_versions_tags',
    sql: `
      -- Earlier contents of files: a content write that replaces a file keeps what it replaced
      -- (a file keeps its latest few; deleting the file forgets them). The collector keeps a blob
      -- a version references.
      CREATE TABLE drive.versions (
        id text PRIMARY KEY,
        item_id text NOT NULL REFERENCES drive.items (id) ON DELETE CASCADE,
        account_id text NOT NULL,
        sha256 text NOT NULL,
        size bigint NOT NULL,
        content_type text NOT NULL,
        written_at timestamptz NOT NULL,
        written_by jsonb NOT NULL,
        replaced_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX versions_item ON drive.versions (item_id, id);
      CREATE INDEX versions_blob ON drive.versions (account_id, sha256);

      -- Tags on items: short labels an agent sets to organise files.
      CREATE TABLE drive.tags (
        item_id text NOT NULL REFERENCES drive.items (id) ON DELETE CASCADE,
        account_id text NOT NULL,
        tag text COLLATE "C" NOT NULL,
        PRIMARY KEY (item_id, tag)
      );
      CREATE INDEX tags_account ON drive.tags (account_id, tag, item_id);
      CREATE INDEX items_recent ON drive.items (account_id, updated_at DESC, id) WHERE kind = 'file';`,
  },
  {
    id: '0005_site_settings',
    sql: `
      -- A site's single-page-app fallback, and its redirects (exact paths from the site root).
      ALTER TABLE drive.sites ADD COLUMN spa_fallback boolean NOT NULL DEFAULT false;
      CREATE TABLE drive.site_redirects (
        site_id text NOT NULL REFERENCES drive.sites (id) ON DELETE CASCADE,
        from_path text COLLATE "C" NOT NULL,
        to_path text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (site_id, from_path)
      );`,
  },
  siteDomains,
  siteDomainChecks,
  quotas,
  blobChecksums,
  usage,
];
