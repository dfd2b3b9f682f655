-- The KPI by day (issue 15, item 6). The actual of a KPI item was counted from
-- the records themselves on every request: a quarter of the team KPI of a
-- busy account aggregated some 40,000 counterparties, tasks, deals, documents
-- and movements. kpi_daily holds the same counts and sums per user and day,
-- so that a user's quarter is a few hundred rows:
--
--   metric 1  counterparties added: by user_id, day of created_at, while not deleted;
--   metric 2  tasks done: by user_id (the assignee), day of done_at, when done;
--   metric 3  deals created: by user_id, day of created_at; amount: their sum;
--   metric 4  documents: by user_id, date and type (type_id), so that a type
--             flagged as an invoice (directory_values.is_invoice) or no longer
--             one needs no recount; amount: their sum;
--   metric 5  income: money movements of direction 1 that are not transfers,
--             by user_id and date; amount: their sum.
--
-- n is the number of records; amount is 0 for the metrics that only count. A
-- row with no record left is removed, so the table is exactly a recount of the
-- records. The day of a moment (metrics 1 to 3) is its date in the ACCOUNT's
-- time zone (accounts.time_zone): the dashboards read kpi_daily only for a
-- caller whose own zone is the account's, and count from the records, as
-- before, for any other (impl/dashboards.go, kpiActualSQL).
--
-- Triggers keep it in the writing transaction: a row trigger of each of the
-- five tables takes a record out of the row of its old key and adds it to the
-- row of its new one (kpi_daily_move), each with a single-row upsert that
-- Citus routes to the shard beside the record. The upsert locks the row of
-- the user, metric, day (and type) until the transaction ends: concurrent
-- writers of one user's records of one day queue there (in practice, that
-- user's own writes). An update that moves a record between two rows touches them in key
-- order, so that two such moves never wait for each other crosswise.
--
-- An update of an account's time zone recounts its rows in the new zone
-- (kpi_daily_rezone); no operation of the server changes it today.
--
-- Big tables: the migration counts every record while the triggers' creation
-- holds writes to the five tables; the fill is one grouped scan per table and
-- account.

CREATE TABLE kpi_daily (
    account_id bigint NOT NULL,
    user_id    bigint NOT NULL,
    metric     smallint NOT NULL CHECK (metric BETWEEN 1 AND 5),
    day        date NOT NULL,
    type_id    bigint NOT NULL DEFAULT 0, -- the document type (metric 4); 0 for the other metrics
    n          bigint NOT NULL,
    amount     numeric NOT NULL,
    PRIMARY KEY (account_id, user_id, metric, day, type_id),
    CONSTRAINT kpi_daily_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id)
);

-- kpi_daily_add adds p_n records and p_amount to one row, and removes the row
-- when no record is left in it. PL/pgSQL, as every function a trigger calls
-- (Citus runs them on the shards).
CREATE FUNCTION kpi_daily_add(p_account bigint, p_user bigint, p_metric smallint, p_day date, p_type bigint, p_n bigint, p_amount numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_n bigint;
BEGIN
    INSERT INTO kpi_daily AS k (account_id, user_id, metric, day, type_id, n, amount)
    VALUES (p_account, p_user, p_metric, p_day, p_type, p_n, p_amount)
    ON CONFLICT (account_id, user_id, metric, day, type_id) DO UPDATE SET n = k.n + excluded.n, amount = k.amount + excluded.amount
    RETURNING k.n INTO v_n;
    IF v_n = 0 THEN
        DELETE FROM kpi_daily
         WHERE account_id = p_account AND user_id = p_user AND metric = p_metric AND day = p_day AND type_id = p_type;
    END IF;
END $$;

-- kpi_daily_move takes a record of amount p_old_amount out of the row (old
-- user, day, type) and adds one of p_new_amount to the row (new user, day,
-- type). A NULL user or day is no row: the record did not count before, or
-- does not count after (the KPI is per user). Within one row only the amount
-- changes; two rows are touched in key order.
CREATE FUNCTION kpi_daily_move(p_account bigint, p_metric smallint,
    p_old_user bigint, p_old_day date, p_old_type bigint, p_old_amount numeric,
    p_new_user bigint, p_new_day date, p_new_type bigint, p_new_amount numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_old boolean := p_old_user IS NOT NULL AND p_old_day IS NOT NULL;
    v_new boolean := p_new_user IS NOT NULL AND p_new_day IS NOT NULL;
BEGIN
    IF v_old AND v_new AND (p_old_user, p_old_day, p_old_type) = (p_new_user, p_new_day, p_new_type) THEN
        IF p_old_amount <> p_new_amount THEN
            PERFORM kpi_daily_add(p_account, p_new_user, p_metric, p_new_day, p_new_type, 0, p_new_amount - p_old_amount);
        END IF;
        RETURN;
    END IF;
    IF v_old AND (NOT v_new OR (p_old_user, p_old_day, p_old_type) < (p_new_user, p_new_day, p_new_type)) THEN
        PERFORM kpi_daily_add(p_account, p_old_user, p_metric, p_old_day, p_old_type, -1, -p_old_amount);
        v_old := false;
    END IF;
    IF v_new THEN
        PERFORM kpi_daily_add(p_account, p_new_user, p_metric, p_new_day, p_new_type, 1, p_new_amount);
    END IF;
    IF v_old THEN
        PERFORM kpi_daily_add(p_account, p_old_user, p_metric, p_old_day, p_old_type, -1, -p_old_amount);
    END IF;
END $$;

-- kpi_daily_moment moves a record placed by a moment (metrics 1 to 3): its
-- day is the date of the moment in the account's time zone, read only when
-- the record counts before or after.
CREATE FUNCTION kpi_daily_moment(p_account bigint, p_metric smallint,
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
        p_new_user, (p_new_at AT TIME ZONE v_tz)::date, 0, p_new_amount);
END $$;

-- Counterparties count while not deleted, on the day of created_at.
CREATE FUNCTION kpi_daily_company() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 1::smallint, old_user, old_at, 0, new_user, new_at, 0);
    RETURN NULL;
END $$;

-- Tasks count for the assignee on the day of done_at, when done.
CREATE FUNCTION kpi_daily_task() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 2::smallint, old_user, old_at, 0, new_user, new_at, 0);
    RETURN NULL;
END $$;

-- Deals count with their sum on the day of created_at.
CREATE FUNCTION kpi_daily_deal() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM kpi_daily_moment(coalesce(NEW.account_id, OLD.account_id), 3::smallint, old_user, old_at, old_sum, new_user, new_at, new_sum);
    RETURN NULL;
END $$;

-- Documents of every type count with their sum on their date, by type.
CREATE FUNCTION kpi_daily_document() RETURNS trigger LANGUAGE plpgsql AS $$
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
        old_user, old_day, old_type, old_sum, new_user, new_day, new_type, new_sum);
    RETURN NULL;
END $$;

-- Income counts with its sum on its date: direction 1, not a transfer.
CREATE FUNCTION kpi_daily_money() RETURNS trigger LANGUAGE plpgsql AS $$
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
        old_user, old_day, 0, old_sum, new_user, new_day, 0, new_sum);
    RETURN NULL;
END $$;

CREATE TRIGGER kpi_daily_ins AFTER INSERT OR DELETE ON companies FOR EACH ROW EXECUTE FUNCTION kpi_daily_company();
CREATE TRIGGER kpi_daily_upd AFTER UPDATE OF user_id, created_at, deleted_at ON companies FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.created_at IS DISTINCT FROM NEW.created_at
          OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION kpi_daily_company();

CREATE TRIGGER kpi_daily_ins AFTER INSERT OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION kpi_daily_task();
CREATE TRIGGER kpi_daily_upd AFTER UPDATE OF user_id, done_at ON tasks FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.done_at IS DISTINCT FROM NEW.done_at)
    EXECUTE FUNCTION kpi_daily_task();

CREATE TRIGGER kpi_daily_ins AFTER INSERT OR DELETE ON deals FOR EACH ROW EXECUTE FUNCTION kpi_daily_deal();
CREATE TRIGGER kpi_daily_upd AFTER UPDATE OF user_id, created_at, sum ON deals FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.sum IS DISTINCT FROM NEW.sum)
    EXECUTE FUNCTION kpi_daily_deal();

CREATE TRIGGER kpi_daily_ins AFTER INSERT OR DELETE ON documents FOR EACH ROW EXECUTE FUNCTION kpi_daily_document();
CREATE TRIGGER kpi_daily_upd AFTER UPDATE OF user_id, date, type_id, sum ON documents FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.date IS DISTINCT FROM NEW.date
          OR OLD.type_id IS DISTINCT FROM NEW.type_id OR OLD.sum IS DISTINCT FROM NEW.sum)
    EXECUTE FUNCTION kpi_daily_document();

CREATE TRIGGER kpi_daily_ins AFTER INSERT OR DELETE ON money_movements FOR EACH ROW EXECUTE FUNCTION kpi_daily_money();
CREATE TRIGGER kpi_daily_upd AFTER UPDATE OF user_id, date, sum, direction, is_transfer ON money_movements FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.date IS DISTINCT FROM NEW.date OR OLD.sum IS DISTINCT FROM NEW.sum
          OR OLD.direction IS DISTINCT FROM NEW.direction OR OLD.is_transfer IS DISTINCT FROM NEW.is_transfer)
    EXECUTE FUNCTION kpi_daily_money();

-- kpi_daily_fill stores the rows of an account that has none: the recount of
-- its records, as the triggers above keep it. crm-bench calls it after a load
-- with the triggers off.
CREATE FUNCTION kpi_daily_fill(p_account bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_tz text;
BEGIN
    SELECT a.time_zone INTO v_tz FROM accounts a WHERE a.id = p_account;
    INSERT INTO kpi_daily (account_id, user_id, metric, day, type_id, n, amount)
    SELECT p_account, c.user_id, 1, (c.created_at AT TIME ZONE v_tz)::date, 0, count(*), 0
      FROM companies c
     WHERE c.account_id = p_account AND c.deleted_at IS NULL AND c.user_id IS NOT NULL
     GROUP BY 2, 4;
    INSERT INTO kpi_daily (account_id, user_id, metric, day, type_id, n, amount)
    SELECT p_account, t.user_id, 2, (t.done_at AT TIME ZONE v_tz)::date, 0, count(*), 0
      FROM tasks t
     WHERE t.account_id = p_account AND t.done_at IS NOT NULL AND t.user_id IS NOT NULL
     GROUP BY 2, 4;
    INSERT INTO kpi_daily (account_id, user_id, metric, day, type_id, n, amount)
    SELECT p_account, d.user_id, 3, (d.created_at AT TIME ZONE v_tz)::date, 0, count(*), sum(d.sum)
      FROM deals d
     WHERE d.account_id = p_account AND d.user_id IS NOT NULL
     GROUP BY 2, 4;
    INSERT INTO kpi_daily (account_id, user_id, metric, day, type_id, n, amount)
    SELECT p_account, d.user_id, 4, d.date, d.type_id, count(*), sum(d.sum)
      FROM documents d
     WHERE d.account_id = p_account AND d.user_id IS NOT NULL
     GROUP BY 2, 4, 5;
    INSERT INTO kpi_daily (account_id, user_id, metric, day, type_id, n, amount)
    SELECT p_account, m.user_id, 5, m.date, 0, count(*), sum(m.sum)
      FROM money_movements m
     WHERE m.account_id = p_account AND m.user_id IS NOT NULL AND m.direction = 1 AND NOT m.is_transfer
     GROUP BY 2, 4;
END $$;

-- A new time zone of the account moves its records' days: its rows are
-- counted again.
CREATE FUNCTION kpi_daily_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM kpi_daily WHERE account_id = NEW.id;
    PERFORM kpi_daily_fill(NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER kpi_daily_rezone AFTER UPDATE OF time_zone ON accounts FOR EACH ROW
    WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION kpi_daily_rezone();

-- The records that exist already. cross-account: the migration fills every
-- account's rows, one account at a time.
DO $$
DECLARE
    v_account bigint;
BEGIN
    FOR v_account IN SELECT a.id FROM accounts a ORDER BY a.id LOOP
        PERFORM kpi_daily_fill(v_account);
    END LOOP;
END $$;
