-- The journal's rows of one call of crm_journal_append count in list_counts
-- (the total of the journal's list, module 50, by author) by one upsert rather
-- than one per row: a write of ten rows (a counterparty with its e-mails,
-- phones and requisites) ran ten upserts of the same counter, each a statement
-- of its own through the trigger (on Citus about 0.15 ms apiece on a worker).
--
-- A row says how many rows it counts for (counted_as, NULL for itself alone):
-- crm_journal_append (db/functions/journal_append.sql) writes 0 on its rows
-- but the last and their number on the last, and the trigger skips the rows
-- that count for none. The mark travels with the row, so it holds on whichever
-- node the row is written; every other writer of the journal, such as a server
-- of the previous release during an upgrade (impl/journal.go, writeJournal),
-- leaves it NULL and is counted row by row as before.
ALTER TABLE journal ADD COLUMN counted_as integer;

CREATE FUNCTION list_counts_journal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_slot smallint := pg_backend_pid() % 8;
BEGIN
    INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
    VALUES (NEW.account_id, 50, 0, coalesce(NEW.user_id, 0), v_slot, coalesce(NEW.counted_as, 1))
    ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + excluded.n;
    RETURN NULL;
END $$;

DROP TRIGGER list_counts_ins ON journal;
CREATE TRIGGER list_counts_ins AFTER INSERT ON journal FOR EACH ROW
    WHEN (NEW.counted_as IS DISTINCT FROM 0)
    EXECUTE FUNCTION list_counts_journal();
