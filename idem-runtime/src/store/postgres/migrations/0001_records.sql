-- idem PostgreSQL store, schema version 1: the records table and the token sequence.
-- Runs inside one transaction with `search_path` set to the store's schema.

-- Fencing tokens: only ever grow, across release, re-reservation and take-over.
CREATE SEQUENCE idem_tokens AS bigint;

CREATE TABLE idem_records (
    namespace    text        NOT NULL,
    key          text        NOT NULL,
    token        bigint      NOT NULL DEFAULT nextval('idem_tokens'),
    state        text        NOT NULL,
    request      text        NOT NULL,  -- the compared fields, canonical JSON
    result       text,                  -- result JSON (completed) or error JSON (failed)
    created_at   timestamptz NOT NULL,  -- the server's clock, whole milliseconds
    updated_at   timestamptz NOT NULL,
    lease_until  timestamptz,           -- in progress only
    retain_until timestamptz,           -- settled only: purged after it
    PRIMARY KEY (namespace, key),
    CONSTRAINT idem_records_state CHECK (state IN ('in_progress', 'completed', 'failed')),
    CONSTRAINT idem_records_settled CHECK (
        (state = 'in_progress') = (lease_until IS NOT NULL)
        AND (state = 'in_progress') = (result IS NULL)
        AND (state = 'in_progress') = (retain_until IS NULL)
    )
);

ALTER SEQUENCE idem_tokens OWNED BY idem_records.token;

CREATE INDEX idem_records_retention ON idem_records (retain_until) WHERE retain_until IS NOT NULL;
