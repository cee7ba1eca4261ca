-- idem PostgreSQL store, schema version 4: budgets.
--
-- A record remembers what its reservation charged (the four charge_ columns, NULL for a
-- record without a budget), in its own row: the charge goes when the record goes, and a
-- take-over (an UPDATE of the row) keeps it. Columns without defaults are added without
-- rewriting the table: existing records were charged nothing.
ALTER TABLE idem_records
    ADD COLUMN charge_budget text,
    ADD COLUMN charge_scope text,
    ADD COLUMN charge_start_ms bigint,   -- the start of the window it was charged to
    ADD COLUMN charge_amount bigint;     -- in millionths

-- One row per budget, scope and window: what it used, by the server's clock.
CREATE TABLE idem_budgets (
    budget          text   NOT NULL,
    scope           text   NOT NULL,     -- '' for an unscoped tool
    start_ms        bigint NOT NULL,     -- a whole multiple of window_ms since the epoch
    window_ms       bigint NOT NULL,
    used            bigint NOT NULL,     -- millionths
    lim             bigint NOT NULL,     -- the last charge's limit
    raised          bigint NOT NULL DEFAULT 0,  -- what operators added
    adjusted_by     text,                -- the last operator's change
    adjusted_at_ms  bigint,
    adjusted_change text,
    adjusted_note   text,
    PRIMARY KEY (budget, scope, start_ms)
);
