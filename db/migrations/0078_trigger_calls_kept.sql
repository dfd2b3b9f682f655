-- The calls from one trigger function to another keep their plans on Citus,
-- as the calls between the functions of db/functions do (budget.sql): Citus
-- counts every function it created on the workers as distributed and makes
-- the generic plan of a bare call with parameters too dear to choose, so each
-- `PERFORM list_counts_move(...)` and each step of the kpi_daily chain was
-- planned again at every row (pg_stat_statements on a worker, a counterparty
-- insert: 16 to 61 us of planning for each of four calls). Each call now
-- carries `WHERE pg_backend_pid() IS NOT NULL`, which holds always and stops
-- Citus before it looks. The functions are otherwise those of the migrations
-- named above each.

-- As in 0009_list_counts_rows.sql.
CREATE OR REPLACE FUNCTION list_counts_company() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        old_owner := OLD.user_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        new_owner := NEW.user_id;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 0::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0009_list_counts_rows.sql.
CREATE OR REPLACE FUNCTION list_counts_user() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_owner := coalesce(OLD.user_id, 0);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_owner := coalesce(NEW.user_id, 0);
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), TG_ARGV[0]::smallint, 0::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0009_list_counts_rows.sql.
CREATE OR REPLACE FUNCTION list_counts_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    new_user bigint;
    old_assigner bigint;
    new_assigner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_user := OLD.user_id;
        old_assigner := CASE WHEN OLD.assigner_id <> OLD.user_id THEN OLD.assigner_id END;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_user := NEW.user_id;
        new_assigner := CASE WHEN NEW.assigner_id <> NEW.user_id THEN NEW.assigner_id END;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 0::smallint, old_user, new_user) WHERE pg_backend_pid() IS NOT NULL;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 1::smallint, old_assigner, new_assigner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0009_list_counts_rows.sql.
CREATE OR REPLACE FUNCTION list_counts_mail() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_owner := OLD.mail_account_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_owner := NEW.mail_account_id;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 24::smallint, 0::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0065_contact_items.sql.
CREATE OR REPLACE FUNCTION list_counts_contact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT c.user_id INTO old_owner FROM companies c
         WHERE c.account_id = OLD.account_id AND c.id = OLD.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT c.user_id INTO new_owner FROM companies c
         WHERE c.account_id = NEW.account_id AND c.id = NEW.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 1::smallint, old_owner, new_owner) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0065_contact_items.sql.
CREATE OR REPLACE FUNCTION list_counts_company_contacts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
    v_n bigint;
BEGIN
    IF OLD.deleted_at IS NULL THEN
        old_owner := OLD.user_id;
    END IF;
    IF NEW.deleted_at IS NULL THEN
        new_owner := NEW.user_id;
    END IF;
    IF old_owner IS NOT DISTINCT FROM new_owner THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM contacts ct WHERE ct.account_id = NEW.account_id AND ct.company_id = NEW.id;
    PERFORM list_counts_move_n(NEW.account_id, 1::smallint, 1::smallint, old_owner, new_owner, v_n) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_move(p_account bigint, p_metric smallint,
    p_old_user bigint, p_old_day date, p_old_type bigint, p_old_amount numeric,
    p_new_user bigint, p_new_day date, p_new_type bigint, p_new_amount numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_old boolean := p_old_user IS NOT NULL AND p_old_day IS NOT NULL;
    v_new boolean := p_new_user IS NOT NULL AND p_new_day IS NOT NULL;
BEGIN
    IF v_old AND v_new AND (p_old_user, p_old_day, p_old_type) = (p_new_user, p_new_day, p_new_type) THEN
        IF p_old_amount <> p_new_amount THEN
            PERFORM kpi_daily_add(p_account, p_new_user, p_metric, p_new_day, p_new_type, 0, p_new_amount - p_old_amount) WHERE pg_backend_pid() IS NOT NULL;
        END IF;
        RETURN;
    END IF;
    IF v_old AND (NOT v_new OR (p_old_user, p_old_day, p_old_type) < (p_new_user, p_new_day, p_new_type)) THEN
        PERFORM kpi_daily_add(p_account, p_old_user, p_metric, p_old_day, p_old_type, -1, -p_old_amount) WHERE pg_backend_pid() IS NOT NULL;
        v_old := false;
    END IF;
    IF v_new THEN
        PERFORM kpi_daily_add(p_account, p_new_user, p_metric, p_new_day, p_new_type, 1, p_new_amount) WHERE pg_backend_pid() IS NOT NULL;
    END IF;
    IF v_old THEN
        PERFORM kpi_daily_add(p_account, p_old_user, p_metric, p_old_day, p_old_type, -1, -p_old_amount) WHERE pg_backend_pid() IS NOT NULL;
    END IF;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_moment(p_account bigint, p_metric smallint,
    p_old_user bigint, p_old_at timestamptz, p_old_amount numeric,
    p_new_user bigint, p_new_at timestamptz, p_new_amount numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_tz text;
BEGIN
    IF p_old_user IS NULL AND p_new_user IS NULL THEN
        RETURN;
    END IF;
    SELECT a.time_zone INTO v_tz FROM accounts a WHERE a.id = p_account;
    PERFORM kpi_daily_move(p_account, p_metric,
        p_old_user, (p_old_at AT TIME ZONE v_tz)::date, 0, p_old_amount,
        p_new_user, (p_new_at AT TIME ZONE v_tz)::date, 0, p_new_amount) WHERE pg_backend_pid() IS NOT NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_company() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    new_user bigint;
    new_at timestamptz;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        old_user := OLD.user_id;
        old_at := OLD.created_at;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        new_user := NEW.user_id;
        new_at := NEW.created_at;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 1::smallint, old_user, old_at, 0, new_user, new_at, 0) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_task() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    new_user bigint;
    new_at timestamptz;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.done_at IS NOT NULL THEN
        old_user := OLD.user_id;
        old_at := OLD.done_at;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.done_at IS NOT NULL THEN
        new_user := NEW.user_id;
        new_at := NEW.done_at;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 2::smallint, old_user, old_at, 0, new_user, new_at, 0) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_deal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_at timestamptz;
    old_sum numeric;
    new_user bigint;
    new_at timestamptz;
    new_sum numeric;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_user := OLD.user_id;
        old_at := OLD.created_at;
        old_sum := OLD.sum;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_user := NEW.user_id;
        new_at := NEW.created_at;
        new_sum := NEW.sum;
    END IF;
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 3::smallint, old_user, old_at, old_sum, new_user, new_at, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_document() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_day date;
    old_type bigint;
    old_sum numeric;
    new_user bigint;
    new_day date;
    new_type bigint;
    new_sum numeric;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_user := OLD.user_id;
        old_day := OLD.date;
        old_type := OLD.type_id;
        old_sum := OLD.sum;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_user := NEW.user_id;
        new_day := NEW.date;
        new_type := NEW.type_id;
        new_sum := NEW.sum;
    END IF;
    PERFORM kpi_daily_move(coalesce(NEW.account_id, OLD.account_id), 4::smallint,
        old_user, old_day, old_type, old_sum, new_user, new_day, new_type, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_money() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_user bigint;
    old_day date;
    old_sum numeric;
    new_user bigint;
    new_day date;
    new_sum numeric;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.direction = 1 AND NOT OLD.is_transfer THEN
        old_user := OLD.user_id;
        old_day := OLD.date;
        old_sum := OLD.sum;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.direction = 1 AND NOT NEW.is_transfer THEN
        new_user := NEW.user_id;
        new_day := NEW.date;
        new_sum := NEW.sum;
    END IF;
    PERFORM kpi_daily_move(coalesce(NEW.account_id, OLD.account_id), 5::smallint,
        old_user, old_day, 0, old_sum, new_user, new_day, 0, new_sum) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;

-- As in 0068_kpi_daily.sql.
CREATE OR REPLACE FUNCTION kpi_daily_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM kpi_daily WHERE account_id = NEW.id;
    PERFORM kpi_daily_fill(NEW.id) WHERE pg_backend_pid() IS NOT NULL;
    RETURN NULL;
END $$;
