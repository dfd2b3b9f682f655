-- list_counts by row triggers. The statement triggers of 0004 turned each
-- statement's transition tables into JSON deltas; for the one-row writes of the
-- API that cost more than the write itself (0.8 ms on PostgreSQL, 1.7 ms on
-- Citus, where the delta insert had to be planned for every shard). A row
-- trigger adds one to, or takes one from, one counter with a single-row upsert,
-- which Citus routes to the shard beside the row, and an update fires it only
-- when the owner (or, for counterparties, deleted_at) changes.
--
-- Locks: a counter row is locked by the upsert until the transaction ends, so
-- concurrent writers of one owner's records would queue on it. Each owner's
-- count is therefore kept in up to 8 rows (slot), and a session always writes
-- the slot of its backend process: concurrent sessions write different rows,
-- and readers sum them. An update that moves a record from one owner to
-- another touches the two counters in key order, so that two such moves never
-- wait for each other crosswise. (Multi-row statements touch counters in row
-- order; the API writes one record per statement.)

ALTER TABLE list_counts ADD COLUMN slot smallint NOT NULL DEFAULT 0;
ALTER TABLE list_counts DROP CONSTRAINT list_counts_pkey;
ALTER TABLE list_counts ADD CONSTRAINT list_counts_pkey PRIMARY KEY (account_id, module, kind, owner_id, slot);

DROP TRIGGER list_counts_ins ON companies;
DROP TRIGGER list_counts_upd ON companies;
DROP TRIGGER list_counts_del ON companies;
DROP TRIGGER list_counts_ins ON tasks;
DROP TRIGGER list_counts_upd ON tasks;
DROP TRIGGER list_counts_del ON tasks;
DROP TRIGGER list_counts_ins ON documents;
DROP TRIGGER list_counts_upd ON documents;
DROP TRIGGER list_counts_del ON documents;
DROP TRIGGER list_counts_ins ON money_movements;
DROP TRIGGER list_counts_upd ON money_movements;
DROP TRIGGER list_counts_del ON money_movements;
DROP TRIGGER list_counts_ins ON deals;
DROP TRIGGER list_counts_upd ON deals;
DROP TRIGGER list_counts_del ON deals;
DROP TRIGGER list_counts_ins ON mail_messages;
DROP TRIGGER list_counts_upd ON mail_messages;
DROP TRIGGER list_counts_del ON mail_messages;
DROP TRIGGER list_counts_ins ON journal;
DROP FUNCTION list_counts_companies();
DROP FUNCTION list_counts_by_user();
DROP FUNCTION list_counts_tasks();
DROP FUNCTION list_counts_mail();
DROP FUNCTION list_counts_apply(jsonb);

-- list_counts_move takes one from the counter (account, module, kind, old
-- owner) and adds one to the counter of the new owner; a NULL owner is no
-- counter. The two counters are touched in key order.
CREATE FUNCTION list_counts_move(p_account bigint, p_module smallint, p_kind smallint, p_old bigint, p_new bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_slot smallint := pg_backend_pid() % 8;
BEGIN
    IF p_old IS NOT DISTINCT FROM p_new THEN
        RETURN;
    END IF;
    IF p_old IS NOT NULL AND (p_new IS NULL OR p_old < p_new) THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_old, v_slot, -1)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n - 1;
        p_old := NULL;
    END IF;
    IF p_new IS NOT NULL THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_new, v_slot, 1)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + 1;
    END IF;
    IF p_old IS NOT NULL THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_old, v_slot, -1)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n - 1;
    END IF;
END $$;

-- Counterparties count while not deleted, by responsible user.
CREATE FUNCTION list_counts_company() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 0::smallint, old_owner, new_owner);
    RETURN NULL;
END $$;

-- Documents (4), money movements (5), deals (20) and the journal (50) count
-- by user_id (the journal's author; 0 for none); the module is the trigger's
-- argument.
CREATE FUNCTION list_counts_user() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), TG_ARGV[0]::smallint, 0::smallint, old_owner, new_owner);
    RETURN NULL;
END $$;

-- Tasks count by assignee (kind 0) and, when someone else assigned them, by
-- assigner (kind 1).
CREATE FUNCTION list_counts_task() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 0::smallint, old_user, new_user);
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 2::smallint, 1::smallint, old_assigner, new_assigner);
    RETURN NULL;
END $$;

-- Mail counts by mail account.
CREATE FUNCTION list_counts_mail() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 24::smallint, 0::smallint, old_owner, new_owner);
    RETURN NULL;
END $$;

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON companies FOR EACH ROW EXECUTE FUNCTION list_counts_company();
CREATE TRIGGER list_counts_upd AFTER UPDATE OF user_id, deleted_at ON companies FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION list_counts_company();

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION list_counts_task();
CREATE TRIGGER list_counts_upd AFTER UPDATE OF user_id, assigner_id ON tasks FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.assigner_id IS DISTINCT FROM NEW.assigner_id)
    EXECUTE FUNCTION list_counts_task();

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON documents FOR EACH ROW EXECUTE FUNCTION list_counts_user(4);
CREATE TRIGGER list_counts_upd AFTER UPDATE OF user_id ON documents FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION list_counts_user(4);

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON money_movements FOR EACH ROW EXECUTE FUNCTION list_counts_user(5);
CREATE TRIGGER list_counts_upd AFTER UPDATE OF user_id ON money_movements FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION list_counts_user(5);

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON deals FOR EACH ROW EXECUTE FUNCTION list_counts_user(20);
CREATE TRIGGER list_counts_upd AFTER UPDATE OF user_id ON deals FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION list_counts_user(20);

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON mail_messages FOR EACH ROW EXECUTE FUNCTION list_counts_mail();
CREATE TRIGGER list_counts_upd AFTER UPDATE OF mail_account_id ON mail_messages FOR EACH ROW
    WHEN (OLD.mail_account_id IS DISTINCT FROM NEW.mail_account_id) EXECUTE FUNCTION list_counts_mail();

-- The journal is only ever inserted into.
CREATE TRIGGER list_counts_ins AFTER INSERT ON journal FOR EACH ROW EXECUTE FUNCTION list_counts_user(50);
