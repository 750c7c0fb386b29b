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
];
