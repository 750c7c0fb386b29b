import type { Migration } from '@svc/kit';

export const migrations: Migration[] = [
  {
    // An account's (or organization's) keys for model providers. `sealed_key` is the key encrypted
    // with the kit's Envelope (associated data `<account_id>/<provider>`); the plaintext is never stored.
    id: '0001_provider_keys',
    sql: `
      CREATE TABLE models.provider_keys (
        account_id text NOT NULL,
        provider text NOT NULL,
        sealed_key text NOT NULL,
        last4 text NOT NULL,
        base_url text,
        set_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, provider)
      );`,
  },
];
