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
  {
    // Threads (docs/threads.md): conversations with an agent, their append-only events (seq 1, 2,
    // 3... per thread, taken under the thread's row lock), runs with their checkpoint, the inbox of
    // injected messages and each tool call recorded before it is executed.
    id: '0003_threads',
    sql: `
      ALTER TABLE agents.agents ADD COLUMN tools text[], ADD COLUMN max_steps integer, ADD COLUMN max_tokens_per_run integer;
      CREATE TABLE agents.threads (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        project_id text,
        agent_id text NOT NULL,
        title text,
        metadata jsonb NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'idle',
        current_run_id text,
        last_seq bigint NOT NULL DEFAULT 0,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        cost numeric NOT NULL DEFAULT 0,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        last_activity_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE INDEX threads_by_activity ON agents.threads (account_id, last_activity_at DESC, id DESC) WHERE deleted_at IS NULL;
      CREATE TABLE agents.thread_events (
        thread_id text NOT NULL,
        seq bigint NOT NULL,
        id text NOT NULL UNIQUE,
        type text NOT NULL,
        run_id text,
        producer jsonb NOT NULL,
        data jsonb NOT NULL,
        usage jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (thread_id, seq)
      );
      CREATE TABLE agents.runs (
        id text PRIMARY KEY,
        thread_id text NOT NULL,
        account_id text NOT NULL,
        agent_id text NOT NULL,
        status text NOT NULL,
        step integer NOT NULL DEFAULT 0,
        context jsonb NOT NULL DEFAULT '[]',
        started_by jsonb NOT NULL,
        cancel_requested boolean NOT NULL DEFAULT false,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        cost numeric NOT NULL DEFAULT 0,
        error jsonb,
        worker text,
        lease_until timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        ended_at timestamptz
      );
      CREATE UNIQUE INDEX runs_one_active ON agents.runs (thread_id) WHERE status IN ('queued', 'running');
      CREATE TABLE agents.thread_inbox (
        id text PRIMARY KEY,
        thread_id text NOT NULL,
        client_message_id text,
        content text NOT NULL,
        mode text NOT NULL,
        status text NOT NULL,
        run_id text,
        delivered_step integer,
        producer jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        delivered_at timestamptz,
        UNIQUE (thread_id, client_message_id)
      );
      CREATE INDEX thread_inbox_waiting ON agents.thread_inbox (thread_id, created_at) WHERE status IN ('pending', 'queued');
      CREATE TABLE agents.tool_calls (
        run_id text NOT NULL,
        call_id text NOT NULL,
        step integer NOT NULL,
        name text NOT NULL,
        arguments jsonb NOT NULL,
        status text NOT NULL,
        result jsonb,
        is_error boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        PRIMARY KEY (run_id, call_id)
      );`,
  },
  {
    // Thread operations (docs/threads.md): archive, tags, forks (the fork's conversation so far is
    // its base context, used until its first run finishes), edits of waiting messages.
    id: '0100_thread_ops',
    sql: `
      ALTER TABLE agents.threads ADD COLUMN archived_at timestamptz, ADD COLUMN tags text[] NOT NULL DEFAULT '{}',
        ADD COLUMN forked_from_thread_id text, ADD COLUMN forked_at_seq bigint, ADD COLUMN base_context jsonb;
      CREATE INDEX threads_by_tag ON agents.threads USING gin (tags) WHERE deleted_at IS NULL;
      ALTER TABLE agents.thread_inbox ADD COLUMN edited_at timestamptz;
      CREATE INDEX thread_events_messages ON agents.thread_events (thread_id, seq) WHERE type IN ('message.created', 'message.injected');
      CREATE INDEX runs_by_thread ON agents.runs (thread_id, created_at DESC, id DESC);`,
  },
  {
    // Agent memory (docs/memory.md): JSON values by account, namespace and key, each write a new
    // version (continuing after a delete) recorded in the key's history.
    id: '0200_memory',
    sql: `
      CREATE TABLE agents.memory (
        account_id text NOT NULL,
        namespace text NOT NULL,
        key text NOT NULL,
        value jsonb NOT NULL,
        version bigint NOT NULL,
        expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        updated_by jsonb NOT NULL,
        PRIMARY KEY (account_id, namespace, key)
      );
      CREATE TABLE agents.memory_history (
        account_id text NOT NULL,
        namespace text NOT NULL,
        key text NOT NULL,
        version bigint NOT NULL,
        op text NOT NULL,
        value jsonb,
        by_actor jsonb NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, namespace, key, version)
      );`,
  },
  {
    // Tasks (docs/memory.md): lists, tasks (a position in their list, blockers), comments, activity.
    id: '0201_tasks',
    sql: `
      CREATE TABLE agents.task_lists (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        name text NOT NULL,
        description text,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX task_lists_by_account ON agents.task_lists (account_id, id);
      CREATE TABLE agents.tasks (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        list_id text NOT NULL REFERENCES agents.task_lists (id) ON DELETE CASCADE,
        title text NOT NULL,
        notes text,
        status text NOT NULL DEFAULT 'open',
        priority text NOT NULL DEFAULT 'normal',
        due_at timestamptz,
        assignee_agent_id text,
        labels text[] NOT NULL DEFAULT '{}',
        position double precision NOT NULL,
        blocked_by text[] NOT NULL DEFAULT '{}',
        completed_at timestamptz,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX tasks_by_list ON agents.tasks (list_id, position, id);
      CREATE INDEX tasks_by_account ON agents.tasks (account_id, id);
      CREATE TABLE agents.task_comments (
        id text PRIMARY KEY,
        task_id text NOT NULL REFERENCES agents.tasks (id) ON DELETE CASCADE,
        body text NOT NULL,
        author jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX task_comments_by_task ON agents.task_comments (task_id, id);
      CREATE TABLE agents.task_activity (
        seq bigserial PRIMARY KEY,
        task_id text NOT NULL REFERENCES agents.tasks (id) ON DELETE CASCADE,
        type text NOT NULL,
        data jsonb NOT NULL,
        actor jsonb NOT NULL,
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX task_activity_by_task ON agents.task_activity (task_id, seq);`,
  },
  {
    // Schedules (docs/memory.md): timed messages to a thread or an agent; the runtime claims a due
    // one (FOR UPDATE SKIP LOCKED), advances it and records the firing in one transaction.
    id: '0202_schedules',
    sql: `
      CREATE TABLE agents.schedules (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        name text NOT NULL,
        message text NOT NULL,
        thread_id text,
        agent_id text,
        cron text,
        interval_seconds integer,
        at timestamptz,
        ends_at timestamptz,
        status text NOT NULL DEFAULT 'active',
        next_fire_at timestamptz,
        last_fired_at timestamptz,
        fire_count integer NOT NULL DEFAULT 0,
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX schedules_by_account ON agents.schedules (account_id, id);
      CREATE INDEX schedules_due ON agents.schedules (next_fire_at) WHERE status = 'active';
      CREATE TABLE agents.schedule_firings (
        id text PRIMARY KEY,
        schedule_id text NOT NULL REFERENCES agents.schedules (id) ON DELETE CASCADE,
        scheduled_for timestamptz,
        fired_at timestamptz NOT NULL DEFAULT now(),
        trigger text NOT NULL,
        status text NOT NULL,
        thread_id text,
        run_id text,
        error text
      );
      CREATE INDEX schedule_firings_by_schedule ON agents.schedule_firings (schedule_id, id);`,
  },
  {
    // Supervising runs (docs/threads.md, "Aborting a tool", "Rollback"): a run a message rolled back
    // (the seq of its run.rolled_back event; its progress is out of the thread's conversation from
    // there on), and a tool call an abort stopped.
    id: '0203_run_rollback_abort',
    sql: `
      ALTER TABLE agents.runs ADD COLUMN rolled_back_seq bigint;
      CREATE INDEX runs_rolled_back ON agents.runs (thread_id) WHERE rolled_back_seq IS NOT NULL;
      ALTER TABLE agents.tool_calls ADD COLUMN aborted boolean NOT NULL DEFAULT false;`,
  },
  {
    // Supervised runs (docs/threads.md, "Approvals", "Questions to a person"): a run paused on a tool
    // call that needs a person's approval, or on the agent's question (waiting_for: approval |
    // answer; no worker holds it then), the requests themselves, and the approval policies of
    // agents and threads (subject: an agent or a thread id).
    id: '0204_approvals',
    sql: `
      ALTER TABLE agents.runs ADD COLUMN waiting_for text;
      CREATE TABLE agents.approvals (
        id text PRIMARY KEY,
        kind text NOT NULL,
        thread_id text NOT NULL,
        run_id text NOT NULL,
        account_id text NOT NULL,
        agent_id text NOT NULL,
        call_id text NOT NULL,
        step integer NOT NULL,
        tool text NOT NULL,
        arguments jsonb,
        status text NOT NULL DEFAULT 'pending',
        edited_arguments jsonb,
        reason text,
        answer text,
        answer_message_id text,
        decided_by jsonb,
        decided_at timestamptz,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (run_id, call_id)
      );
      CREATE INDEX approvals_by_thread ON agents.approvals (thread_id, created_at);
      CREATE INDEX approvals_by_account_pending ON agents.approvals (account_id, created_at) WHERE status = 'pending';
      CREATE INDEX approvals_due ON agents.approvals (expires_at) WHERE status = 'pending';
      CREATE TABLE agents.approval_policies (
        subject_id text PRIMARY KEY,
        account_id text NOT NULL,
        tools text[] NOT NULL,
        updated_by jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
];
