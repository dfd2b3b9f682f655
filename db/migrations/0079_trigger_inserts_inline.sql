-- A row inserted into counterparties, contact persons, tasks or deals moves
-- its counters in the trigger function itself, without calling the functions
-- that the other changes still go through (list_counts_move, and the
-- kpi_daily_moment -> kpi_daily_move -> kpi_daily_add chain). An insert only
-- ever adds one to a counter, which those functions did by one statement at
-- the end of their calls; each call is a PL/pgSQL call with its own plan, and
-- on a Citus worker a deal insert spent about 90 us in the kpi_daily chain
-- around its 70 us INSERT and about 35 us in list_counts_move
-- (pg_stat_statements, one client). The statements are theirs: the counter
-- row of list_counts_move (slot pg_backend_pid() % 8) and the row of
-- kpi_daily_add, on the day of the account's time zone that kpi_daily_moment
-- reads. An added record never brings a kpi_daily row to no records, so
-- nothing is deleted. Updates and deletes are as in the migrations named
-- above each function, as is everything else.

-- As in 0078_trigger_calls_kept.sql, with the insert inline.
CREATE OR REPLACE FUNCTION list_counts_company() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.deleted_at IS NULL AND NEW.user_id IS NOT NULL THEN
            INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
            VALUES (NEW.account_id, 1, 0, NEW.user_id, pg_backend_pid() % 8, 1)
            ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        old_owner := OLD.user_id;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.deleted_at IS NULL THEN
        new_owner := NEW.user_id;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 0::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline.
CREATE OR REPLACE FUNCTION list_counts_user() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
        VALUES (NEW.account_id, TG_ARGV[0]::smallint, 0, coalesce(NEW.user_id, 0), pg_backend_pid() % 8, 1)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_owner := coalesce(OLD.user_id, 0);
    END IF;
    IF TG_OP = 'UPDATE' THEN
        new_owner := coalesce(NEW.user_id, 0);
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), TG_ARGV[0]::smallint, 0::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline: the assignee's
-- counter, and the assigner's of kind 1 when it is someone else.
CREATE OR REPLACE FUNCTION list_counts_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    new_user bigint;
    old_assigner bigint;
    new_assigner bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.user_id IS NOT NULL THEN
            INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
            VALUES (NEW.account_id, 2, 0, NEW.user_id, pg_backend_pid() % 8, 1)
            ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
        END IF;
        IF NEW.assigner_id <> NEW.user_id THEN
            INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
            VALUES (NEW.account_id, 2, 1, NEW.assigner_id, pg_backend_pid() % 8, 1)
            ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_user := OLD.user_id;
        old_assigner := CASE WHEN OLD.assigner_id <> OLD.user_id THEN OLD.assigner_id END;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        new_user := NEW.user_id;
        new_assigner := CASE WHEN NEW.assigner_id <> NEW.user_id THEN NEW.assigner_id END;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 0::smallint, old_user, new_user) WHERE pg_backend_pid() IS NOT NULL;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 1::smallint, old_assigner, new_assigner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline: the contact
-- person counts for the owner of their live counterparty.
CREATE OR REPLACE FUNCTION list_counts_contact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT c.user_id INTO new_owner FROM companies c
         WHERE c.account_id = NEW.account_id AND c.id = NEW.company_id AND c.deleted_at IS NULL FOR SHARE;
        IF new_owner IS NOT NULL THEN
            INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
            VALUES (NEW.account_id, 1, 1, new_owner, pg_backend_pid() % 8, 1)
            ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT c.user_id INTO old_owner FROM companies c
         WHERE c.account_id = OLD.account_id AND c.id = OLD.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        SELECT c.user_id INTO new_owner FROM companies c
         WHERE c.account_id = NEW.account_id AND c.id = NEW.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 1::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline: a live
-- counterparty counts on the day of created_at.
CREATE OR REPLACE FUNCTION kpi_daily_company() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    old_sum numeric;
    new_user bigint;
    new_at timestamptz;
    new_sum numeric;
    v_tz text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.deleted_at IS NULL AND NEW.user_id IS NOT NULL THEN
            SELECT a.time_zone INTO v_tz FROM accounts a WHERE a.id = NEW.account_id;
            INSERT INTO kpi_daily AS k (account_id, user_id, metric, day, type_id, n, amount)
            VALUES (NEW.account_id, NEW.user_id, 1, (NEW.created_at AT TIME ZONE v_tz)::date, 0, 1, 0)
            ON CONFLICT (account_id, user_id, metric, day, type_id) DO UPDATE SET n = k.n + 1, amount = k.amount + excluded.amount;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        old_user := OLD.user_id;
        old_at := OLD.created_at;
        old_sum := 0;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.deleted_at IS NULL THEN
        new_user := NEW.user_id;
        new_at := NEW.created_at;
        new_sum := 0;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 1::smallint, old_user, old_at, old_sum, new_user, new_at, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline: a done task
-- counts for the assignee on the day of done_at.
CREATE OR REPLACE FUNCTION kpi_daily_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    old_sum numeric;
    new_user bigint;
    new_at timestamptz;
    new_sum numeric;
    v_tz text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.done_at IS NOT NULL AND NEW.user_id IS NOT NULL THEN
            SELECT a.time_zone INTO v_tz FROM accounts a WHERE a.id = NEW.account_id;
            INSERT INTO kpi_daily AS k (account_id, user_id, metric, day, type_id, n, amount)
            VALUES (NEW.account_id, NEW.user_id, 2, (NEW.done_at AT TIME ZONE v_tz)::date, 0, 1, 0)
            ON CONFLICT (account_id, user_id, metric, day, type_id) DO UPDATE SET n = k.n + 1, amount = k.amount + excluded.amount;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.done_at IS NOT NULL THEN
        old_user := OLD.user_id;
        old_at := OLD.done_at;
        old_sum := 0;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.done_at IS NOT NULL THEN
        new_user := NEW.user_id;
        new_at := NEW.done_at;
        new_sum := 0;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 2::smallint, old_user, old_at, old_sum, new_user, new_at, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0078_trigger_calls_kept.sql, with the insert inline: a deal counts
-- with its sum on the day of created_at.
CREATE OR REPLACE FUNCTION kpi_daily_deal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    old_sum numeric;
    new_user bigint;
    new_at timestamptz;
    new_sum numeric;
    v_tz text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.user_id IS NOT NULL THEN
            SELECT a.time_zone INTO v_tz FROM accounts a WHERE a.id = NEW.account_id;
            INSERT INTO kpi_daily AS k (account_id, user_id, metric, day, type_id, n, amount)
            VALUES (NEW.account_id, NEW.user_id, 3, (NEW.created_at AT TIME ZONE v_tz)::date, 0, 1, NEW.sum)
            ON CONFLICT (account_id, user_id, metric, day, type_id) DO UPDATE SET n = k.n + 1, amount = k.amount + excluded.amount;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_user := OLD.user_id;
        old_at := OLD.created_at;
        old_sum := OLD.sum;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        new_user := NEW.user_id;
        new_at := NEW.created_at;
        new_sum := NEW.sum;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 3::smallint, old_user, old_at, old_sum, new_user, new_at, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;
