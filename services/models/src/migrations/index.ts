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
  {
    // Credits (docs/models.md, "Credits"): each account's ledger, grants (> 0) and charges (< 0),
    // exact decimals. A charge is unique per (account, charge_key), so a retried step is charged
    // once. The balance is kept beside it, changed in the transaction that adds the entry.
    id: '0002_credits',
    sql: `
      CREATE TABLE models.credit_entries (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('grant', 'charge')),
        amount numeric(38, 12) NOT NULL,
        currency text NOT NULL,
        model text,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        charge_key text,
        memo text,
        actor jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'charge') = (charge_key IS NOT NULL))
      );
      CREATE UNIQUE INDEX credit_entries_charge_key ON models.credit_entries (account_id, charge_key) WHERE charge_key IS NOT NULL;
      CREATE INDEX credit_entries_account ON models.credit_entries (account_id, id DESC);
      CREATE TABLE models.credit_balances (
        account_id text PRIMARY KEY,
        balance numeric(38, 12) NOT NULL,
        currency text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
  {
    // Inference usage (docs/models.md, "Usage"): one record per Infer call that finished, free or
    // paid, and the last error each provider gave each account.
    id: '0003_usage',
    sql: `
      CREATE TABLE models.usage (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        model text NOT NULL,
        provider text NOT NULL,
        input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        cost numeric(38, 12) NOT NULL,
        currency text NOT NULL,
        own_key boolean NOT NULL,
        charged boolean NOT NULL,
        charge_key text NOT NULL,
        finish_reason text NOT NULL,
        actor jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX usage_account ON models.usage (account_id, id DESC);
      CREATE TABLE models.provider_errors (
        account_id text NOT NULL,
        provider text NOT NULL,
        code text NOT NULL,
        message text NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, provider)
      );`,
  },
  {
    // Low-balance alerts on credits (docs/models.md, "Credits"): each triggers once when the
    // account's balance is at or below its threshold.
    id: '0004_credit_alerts',
    sql: `
      CREATE TABLE models.credit_alerts (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        threshold numeric(38, 12) NOT NULL,
        note text,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'triggered')),
        triggered_at timestamptz,
        triggered_balance numeric(38, 12),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX credit_alerts_account ON models.credit_alerts (account_id, id DESC);`,
  },
];
