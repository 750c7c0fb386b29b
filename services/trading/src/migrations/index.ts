import type { Migration } from '@svc/kit';

export const migrations: Migration[] = [
  {
    // Orders at every venue (the paper venue's and those sent to an external one), fills, paper
    // balances, the books' state, agents' limits and daily usage, venue credentials. Amounts are
    // exact decimals (numeric); balances are integer units of 10^-9 of their asset.
    id: '0001_trading',
    sql: `
      CREATE TABLE trading.books (
        venue text NOT NULL,
        symbol text NOT NULL,
        version bigint NOT NULL DEFAULT 0,
        state jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (venue, symbol)
      );
      CREATE TABLE trading.orders (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        venue text NOT NULL,
        symbol text NOT NULL,
        client_order_id text NOT NULL,
        request_hash text NOT NULL,
        side text NOT NULL,
        type text NOT NULL,
        time_in_force text NOT NULL,
        qty numeric NOT NULL,
        price numeric,
        stop_price numeric,
        filled_qty numeric NOT NULL DEFAULT 0,
        filled_notional numeric NOT NULL DEFAULT 0,
        fees numeric NOT NULL DEFAULT 0,
        hold_units numeric NOT NULL DEFAULT 0,
        status text NOT NULL,
        reason text,
        triggered boolean NOT NULL DEFAULT false,
        seq bigint NOT NULL DEFAULT 0,
        placed_by jsonb NOT NULL,
        external_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (account_id, venue, client_order_id),
        CHECK (hold_units >= 0 AND filled_qty >= 0 AND filled_qty <= qty)
      );
      CREATE INDEX orders_account ON trading.orders (account_id, id);
      CREATE INDEX orders_open ON trading.orders (venue, symbol, seq) WHERE status IN ('new', 'partially_filled');
      CREATE TABLE trading.fills (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        order_id text NOT NULL REFERENCES trading.orders (id),
        venue text NOT NULL,
        symbol text NOT NULL,
        side text NOT NULL,
        price numeric NOT NULL,
        qty numeric NOT NULL,
        notional numeric NOT NULL,
        fee numeric NOT NULL,
        liquidity text NOT NULL,
        seq bigint NOT NULL,
        epoch integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- One fill of the book's matching, once per side: a fill recorded twice fails here.
        UNIQUE (venue, symbol, seq, liquidity)
      );
      CREATE INDEX fills_account ON trading.fills (account_id, id);
      CREATE INDEX fills_order ON trading.fills (order_id);
      CREATE TABLE trading.paper_accounts (
        account_id text NOT NULL,
        venue text NOT NULL,
        epoch integer NOT NULL DEFAULT 0,
        starting_cash numeric NOT NULL,
        reset_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, venue)
      );
      CREATE TABLE trading.balances (
        account_id text NOT NULL,
        venue text NOT NULL,
        asset text NOT NULL,
        total numeric NOT NULL,
        held numeric NOT NULL DEFAULT 0,
        PRIMARY KEY (account_id, venue, asset),
        CONSTRAINT balance_covers_holds CHECK (held >= 0 AND total >= held)
      );
      CREATE TABLE trading.agent_limits (
        account_id text NOT NULL,
        agent_id text NOT NULL,
        max_notional_per_order numeric,
        max_notional_per_day numeric,
        symbols text[],
        paper_only boolean NOT NULL DEFAULT true,
        set_by jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, agent_id)
      );
      CREATE TABLE trading.agent_usage (
        account_id text NOT NULL,
        agent_id text NOT NULL,
        day date NOT NULL,
        notional numeric NOT NULL DEFAULT 0,
        PRIMARY KEY (account_id, agent_id, day)
      );
      CREATE TABLE trading.credentials (
        account_id text NOT NULL,
        venue text NOT NULL,
        key_id text NOT NULL,
        sealed_secret text NOT NULL,
        last4 text NOT NULL,
        set_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, venue)
      );`,
  },
  {
    // Watchlists, price alerts and the trading journal of an account (docs/trading.md).
    id: '0002_lists_alerts_journal',
    sql: `
      CREATE TABLE trading.watchlists (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        name text NOT NULL,
        symbols text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (account_id, name)
      );
      CREATE INDEX watchlists_account ON trading.watchlists (account_id, id);
      CREATE TABLE trading.alerts (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        venue text NOT NULL,
        symbol text NOT NULL,
        condition text NOT NULL CHECK (condition IN ('above', 'below')),
        price numeric NOT NULL,
        note text,
        status text NOT NULL DEFAULT 'active',
        triggered_at timestamptz,
        triggered_price numeric,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX alerts_account ON trading.alerts (account_id, id);
      CREATE INDEX alerts_active ON trading.alerts (venue, symbol) WHERE status = 'active';
      CREATE TABLE trading.journal (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        symbol text,
        order_id text,
        tags text[] NOT NULL DEFAULT '{}',
        created_by jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX journal_account ON trading.journal (account_id, id);
      CREATE INDEX fills_book_time ON trading.fills (venue, symbol, created_at);`,
  },
  {
    // Notional orders (docs/trading.md, "Notional orders"): the amount of the quote asset asked for.
    // The account's order updates (docs/trading.md, "Order updates"): one gap-free sequence per
    // account, written with the change it records; `event_seqs` holds each account's last one.
    id: '0003_notional_events',
    sql: `
      ALTER TABLE trading.orders ADD COLUMN notional numeric;
      CREATE TABLE trading.event_seqs (
        account_id text PRIMARY KEY,
        last_seq bigint NOT NULL
      );
      CREATE TABLE trading.events (
        account_id text NOT NULL,
        seq bigint NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        venue text NOT NULL,
        symbol text,
        order_id text,
        data jsonb NOT NULL,
        balances jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, seq)
      );`,
  },
  {
    // Linked orders and trailing stops (docs/trading.md, "Linked orders"): a leg names its entry
    // (`parent_id`) and an OCO leg its other leg (`sibling_id`); a bracket's legs wait `held`.
    id: '0004_linked_orders',
    sql: `
      ALTER TABLE trading.orders ADD COLUMN order_class text NOT NULL DEFAULT 'simple',
        ADD COLUMN parent_id text, ADD COLUMN sibling_id text,
        ADD COLUMN trail_price numeric, ADD COLUMN trail_percent numeric, ADD COLUMN hwm numeric;
      CREATE INDEX orders_parent ON trading.orders (parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX orders_held ON trading.orders (venue, symbol) WHERE status = 'held';`,
  },
];
