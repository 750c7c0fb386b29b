import type { Migration } from '@svc/kit';

/**
 * Every key's expiry capped at its ancestors' (LEAST skips NULL, "never"), and every key below a
 * revoked key revoked. Changes nothing where lineage already holds (a second run is a no-op).
 */
export const LINEAGE_REPAIR_SQL = `
  WITH RECURSIVE tree AS (
    SELECT id, expires_at AS cap, revoked_at IS NOT NULL AS dead
      FROM keys.api_keys WHERE created_by_key_id IS NULL
    UNION ALL
    SELECT k.id, LEAST(k.expires_at, t.cap), t.dead OR k.revoked_at IS NOT NULL
      FROM keys.api_keys k JOIN tree t ON k.created_by_key_id = t.id
  )
  UPDATE keys.api_keys k
     SET expires_at = tree.cap,
         revoked_at = CASE WHEN tree.dead THEN COALESCE(k.revoked_at, now()) ELSE k.revoked_at END
    FROM tree
   WHERE k.id = tree.id
     AND (k.expires_at IS DISTINCT FROM tree.cap OR (tree.dead AND k.revoked_at IS NULL));`;

export const migrations: Migration[] = [
  {
    id: '0001_api_keys',
    sql: `
      CREATE TABLE keys.api_keys (
        id text PRIMARY KEY,
        key_hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        name text NOT NULL,
        account_id text NOT NULL,
        owner_kind text NOT NULL CHECK (owner_kind IN ('human', 'agent')),
        owner_id text NOT NULL,
        project_id text,
        created_by_key_id text,
        expires_at timestamptz,
        revoked_at timestamptz,
        last_used_at timestamptz,
        usage_count bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX api_keys_active_by_account ON keys.api_keys (account_id, id) WHERE revoked_at IS NULL;
      CREATE INDEX api_keys_by_owner ON keys.api_keys (owner_kind, owner_id) WHERE revoked_at IS NULL;`,
  },
  {
    // Idempotency-Key records (docs/reliability.md): one per acting account, API key and key; a
    // claim while the request runs, then its answer; deleted by the sweeper once expired.
    id: '0002_idempotency',
    sql: `
      CREATE TABLE keys.idempotency (
        account_id text NOT NULL,
        key_id text NOT NULL,
        idem_key text NOT NULL,
        fingerprint text NOT NULL,
        claim text,
        locked_until timestamptz,
        status integer,
        headers jsonb,
        body bytea,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (account_id, key_id, idem_key)
      );
      CREATE INDEX idempotency_expiry ON keys.idempotency (expires_at);`,
  },
  {
    // A streamed request's content hash, known only once its bytes have arrived (docs/reliability.md).
    id: '0003_idempotency_content',
    sql: `ALTER TABLE keys.idempotency ADD COLUMN content_sha256 text;`,
  },
  {
    // Lineage is authority (docs/keys.md): a key never outlives the key that created it. The
    // index finds a key's children for a cascading revocation; LINEAGE_REPAIR_SQL brings the keys
    // made before the rule under it.
    id: '0004_key_lineage',
    sql: `
      CREATE INDEX api_keys_by_parent ON keys.api_keys (created_by_key_id) WHERE created_by_key_id IS NOT NULL;
      ${LINEAGE_REPAIR_SQL}`,
  },
];
