-- idem PostgreSQL store, schema version 5: a charged reservation in one round trip.
--
-- idem_reserve_charged does on the server what the client did in five round trips (read
-- the record; BEGIN; charge the window; insert the record; COMMIT), in the transaction of
-- the one statement that calls it:
--
--   1. A record that exists is returned ('existing'): a repeat charges nothing and locks
--      no window.
--   2. The window is charged (created if new) if the charge fits, or past its limit when
--      approved. The charge locks the window's row until the end of the transaction, so
--      concurrent charges of one window take turns, each seeing the last one's use; it
--      waits up to p_window_wait_ms for that lock. A window that refuses the charge is
--      returned as it is ('over'); a new window that the charge alone passes is removed
--      again and returned as it was (nothing used).
--   3. The record is inserted carrying its charge ('acquired', with its token), waiting up
--      to p_record_wait_ms for a transaction of PgStore::begin that holds its key.
--   4. A record that another caller committed since step 1 wins: the charge is undone (the
--      window's row is still locked by this transaction, so nobody saw it) and the function
--      reads again. A record that vanished in between three times in a row is an error.
--
-- Each statement in the function takes a new snapshot (READ COMMITTED), as the client's
-- statements did. The function runs with the search_path of its schema, whatever the
-- caller's. The columns it returns: what happened, the record's columns as the store reads
-- them (Sql::Read), the window's (WINDOW_COLUMNS).
CREATE FUNCTION idem_reserve_charged(
    p_namespace text, p_key text, p_request text, p_lease_ms bigint,
    p_budget text, p_scope text, p_window_ms bigint, p_limit bigint, p_amount bigint, p_past_limit boolean,
    p_window_wait_ms bigint, p_record_wait_ms bigint)
RETURNS TABLE (
    o_outcome text,
    o_token bigint, o_state text, o_request text, o_result text, o_created_at timestamptz,
    o_updated_at timestamptz, o_lease_until timestamptz, o_lease_expired boolean,
    o_retain_until timestamptz, o_progress text,
    o_budget text, o_scope text, o_start_ms bigint, o_window_ms bigint, o_used bigint, o_lim bigint,
    o_raised bigint, o_adjusted_by text, o_adjusted_at_ms bigint, o_adjusted_change text,
    o_adjusted_note text)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    now_at timestamptz := date_trunc('milliseconds', now());
    now_ms bigint := (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8;
    window_start bigint;
    new_window boolean;
    new_token bigint;
BEGIN
    window_start := now_ms - mod(now_ms, greatest(p_window_ms, 1));
    FOR round IN 1..3 LOOP
        RETURN QUERY
            SELECT 'existing'::text, r.token, r.state, r.request, r.result, r.created_at, r.updated_at,
                   r.lease_until, r.lease_until <= now(), r.retain_until, r.progress,
                   NULL::text, NULL::text, NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8,
                   NULL::text, NULL::int8, NULL::text, NULL::text
            FROM idem_records AS r WHERE r.namespace = p_namespace AND r.key = p_key;
        IF FOUND THEN
            RETURN;
        END IF;

        PERFORM set_config('lock_timeout', p_window_wait_ms::text, true);
        -- The check adds in numeric: two amounts of 9e12 units pass a bigint, and a charge
        -- that does not fit must be refused, not fail.
        INSERT INTO idem_budgets AS w (budget, scope, start_ms, window_ms, used, lim)
            VALUES (p_budget, p_scope, window_start, p_window_ms, p_amount, p_limit)
            ON CONFLICT (budget, scope, start_ms) DO UPDATE SET used = w.used + excluded.used, lim = excluded.lim
            WHERE w.used::numeric + excluded.used <= 9223372036854775807
              AND (p_past_limit OR w.used::numeric + excluded.used <= excluded.lim::numeric + w.raised)
            RETURNING (w.xmax = 0) INTO new_window;
        IF NOT FOUND THEN
            -- A window that exists refused it: as it is, with this charge's limit.
            RETURN QUERY
                SELECT 'over'::text, NULL::int8, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
                       NULL::timestamptz, NULL::timestamptz, NULL::boolean, NULL::timestamptz, NULL::text,
                       b.budget, b.scope, b.start_ms, b.window_ms, b.used, p_limit, b.raised,
                       b.adjusted_by, b.adjusted_at_ms, b.adjusted_change, b.adjusted_note
                FROM idem_budgets AS b
                WHERE b.budget = p_budget AND b.scope = p_scope AND b.start_ms = window_start;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'the window that refused the charge is gone';
            END IF;
            RETURN;
        END IF;
        IF new_window AND NOT (p_past_limit OR p_amount <= p_limit) THEN
            -- A new window that this one charge passes: as it was before it.
            DELETE FROM idem_budgets AS b
                WHERE b.budget = p_budget AND b.scope = p_scope AND b.start_ms = window_start;
            RETURN QUERY
                SELECT 'over'::text, NULL::int8, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
                       NULL::timestamptz, NULL::timestamptz, NULL::boolean, NULL::timestamptz, NULL::text,
                       p_budget, p_scope, window_start, p_window_ms, 0::int8, p_limit, 0::int8,
                       NULL::text, NULL::int8, NULL::text, NULL::text;
            RETURN;
        END IF;

        PERFORM set_config('lock_timeout', p_record_wait_ms::text, true);
        INSERT INTO idem_records (namespace, key, state, request, created_at, updated_at, lease_until,
                                  charge_budget, charge_scope, charge_start_ms, charge_amount)
            VALUES (p_namespace, p_key, 'in_progress', p_request, now_at, now_at,
                    now_at + p_lease_ms * interval '1 millisecond', p_budget, p_scope, window_start, p_amount)
            ON CONFLICT (namespace, key) DO NOTHING
            RETURNING token INTO new_token;
        IF FOUND THEN
            RETURN QUERY
                SELECT 'acquired'::text, new_token, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
                       NULL::timestamptz, NULL::timestamptz, NULL::boolean, NULL::timestamptz, NULL::text,
                       NULL::text, NULL::text, NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8,
                       NULL::text, NULL::int8, NULL::text, NULL::text;
            RETURN;
        END IF;

        -- Another caller's record committed since the read: undo the charge, read it.
        IF new_window THEN
            DELETE FROM idem_budgets AS b
                WHERE b.budget = p_budget AND b.scope = p_scope AND b.start_ms = window_start;
        ELSE
            UPDATE idem_budgets AS b SET used = b.used - p_amount
                WHERE b.budget = p_budget AND b.scope = p_scope AND b.start_ms = window_start;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'reserving %/%: the existing record vanished 3 times in a row', p_namespace, p_key;
END;
$$;
