import type { Migration } from '@svc/kit';

export const migrations: Migration[] = [
  {
    id: '0001_accounts',
    sql: `
      CREATE TABLE accounts.accounts (
        id text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('user', 'organization')),
        name text NOT NULL,
        email text,
        is_operator boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE accounts.memberships (
        org_id text NOT NULL REFERENCES accounts.accounts (id),
        member_id text NOT NULL REFERENCES accounts.accounts (id),
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, member_id)
      );
      CREATE INDEX memberships_by_member ON accounts.memberships (member_id);`,
  },
  {
    id: '0002_orgs_settings_grants_signing_hosts_audit',
    sql: `
      CREATE UNIQUE INDEX accounts_email ON accounts.accounts (lower(email)) WHERE email IS NOT NULL;
      ALTER TABLE accounts.accounts ADD COLUMN created_by jsonb;
      ALTER TABLE accounts.memberships ADD COLUMN added_by jsonb;

      CREATE TABLE accounts.settings (
        account_id text PRIMARY KEY REFERENCES accounts.accounts (id),
        document jsonb NOT NULL,
        etag text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        updated_by jsonb NOT NULL
      );

      CREATE TABLE accounts.standing_grants (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts.accounts (id),
        grantee_kind text NOT NULL CHECK (grantee_kind IN ('agent', 'host', 'account')),
        grantee_id text NOT NULL,
        verbs text[] NOT NULL,
        scope text NOT NULL,
        expires_at timestamptz,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        revoked_by jsonb
      );
      -- One live grant per (account, grantee, scope): a second POST widens it.
      CREATE UNIQUE INDEX standing_grants_live ON accounts.standing_grants (account_id, grantee_id, scope)
        WHERE revoked_at IS NULL;
      CREATE INDEX standing_grants_by_grantee ON accounts.standing_grants (grantee_id, id) WHERE revoked_at IS NULL;

      CREATE TABLE accounts.signing_keys (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts.accounts (id),
        public_jwk jsonb NOT NULL,
        -- AES-256-GCM under a key derived (HKDF) from the internal secret; see signing.ts.
        private_key_enc text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz,
        verify_until timestamptz
      );
      CREATE UNIQUE INDEX signing_keys_current ON accounts.signing_keys (account_id) WHERE retired_at IS NULL;
      CREATE INDEX signing_keys_by_account ON accounts.signing_keys (account_id, id);

      CREATE TABLE accounts.hosts (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts.accounts (id),
        name text NOT NULL,
        credential_hash text NOT NULL UNIQUE,
        credential_prefix text NOT NULL,
        paired_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz,
        unpaired_at timestamptz
      );
      CREATE INDEX hosts_by_account ON accounts.hosts (account_id, id) WHERE unpaired_at IS NULL;

      CREATE TABLE accounts.audit_events (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        action text NOT NULL,
        actor jsonb NOT NULL,
        target_kind text,
        target_id text,
        data jsonb NOT NULL DEFAULT '{}'::jsonb,
        occurred_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX audit_events_by_account ON accounts.audit_events (account_id, id);`,
  },
  {
    // The agents as the agents service holds them (it writes them: SyncAgents), for the chain of
    // authority and grants to agents; see docs/accounts.md, "Agents in accounts".
    id: '0002_agent_records',
    sql: `
      CREATE TABLE accounts.agents (
        id text PRIMARY KEY,
        owner_account_id text NOT NULL,
        name text NOT NULL,
        version integer NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        synced_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
  {
    // The OAuth authorization server's records (docs/oauth.md): every model oidc-provider keeps,
    // by model and id. Bearer values are never stored: their id is the SHA-256 the gateway sends.
    id: '0003_oauth',
    sql: `
      CREATE TABLE accounts.oauth_records (
        model text NOT NULL,
        id text NOT NULL,
        payload jsonb NOT NULL,
        grant_id text,
        uid text,
        user_code text,
        -- The person a grant is for (Grant records only): the connected apps page lists by it.
        account_id text,
        expires_at timestamptz,
        consumed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        PRIMARY KEY (model, id)
      );
      CREATE INDEX oauth_records_by_grant ON accounts.oauth_records (grant_id) WHERE grant_id IS NOT NULL;
      CREATE INDEX oauth_records_by_uid ON accounts.oauth_records (model, uid) WHERE uid IS NOT NULL;
      CREATE INDEX oauth_records_by_user_code ON accounts.oauth_records (model, user_code) WHERE user_code IS NOT NULL;
      CREATE INDEX oauth_grants_by_account ON accounts.oauth_records (account_id, created_at) WHERE model = 'Grant';
      CREATE INDEX oauth_records_expiry ON accounts.oauth_records (expires_at) WHERE expires_at IS NOT NULL;

      CREATE TABLE accounts.oauth_server_keys (
        id text PRIMARY KEY,
        -- AES-256-GCM under the vault key (signing.ts), the key id as additional data.
        private_jwk_enc text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz
      );`,
  },
  {
    id: '0004_passkeys',
    sql: `
      -- A person's passkeys (WebAuthn credentials): the public key only, never a secret.
      CREATE TABLE accounts.passkeys (
        -- The credential id (base64url), as the authenticator made it.
        id text PRIMARY KEY,
        user_id text NOT NULL REFERENCES accounts.accounts (id) ON DELETE CASCADE,
        name text NOT NULL,
        -- The COSE public key, base64url.
        public_key text NOT NULL,
        counter bigint NOT NULL DEFAULT 0,
        transports text[] NOT NULL DEFAULT '{}',
        device_type text NOT NULL,
        backed_up boolean NOT NULL,
        aaguid text,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz
      );
      CREATE INDEX passkeys_by_user ON accounts.passkeys (user_id, created_at);

      -- Challenges of ceremonies in progress: taken once, short-lived.
      CREATE TABLE accounts.passkey_challenges (
        -- SHA-256 of the challenge (base64url).
        id text PRIMARY KEY,
        ceremony text NOT NULL CHECK (ceremony IN ('registration', 'authentication')),
        user_id text,
        binding text NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX passkey_challenges_expiry ON accounts.passkey_challenges (expires_at);`,
  },
];
