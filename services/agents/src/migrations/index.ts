import type { Migration } from '@svc/kit';

export const migrations: Migration[] = [
  {
    id: '0001_agents',
    sql: `
      CREATE TABLE agents.agents (
        id text PRIMARY KEY,
        owner_account_id text NOT NULL,
        project_id text,
        name text NOT NULL,
        description text,
        model text,
        instructions text,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE INDEX agents_by_owner ON agents.agents (owner_account_id, id) WHERE deleted_at IS NULL;
      CREATE TABLE agents.default_agents (
        account_id text NOT NULL,
        position int NOT NULL,
        agent_id text NOT NULL REFERENCES agents.agents (id),
        PRIMARY KEY (account_id, position),
        UNIQUE (account_id, agent_id)
      );
      CREATE INDEX default_agents_by_agent ON agents.default_agents (agent_id);`,
  },
  {
    // 1 when created, +1 per change and on deletion (under the row lock): the order of an agent's
    // states, carried to the accounts service's records of agents (SyncAgents) and in events.
    id: '0002_agent_version',
    sql: `ALTER TABLE agents.agents ADD COLUMN version integer NOT NULL DEFAULT 1;`,
  },
];
