-- crm_journal_append, for the functions that write (company_insert.sql and
-- the others): the journal rows of one account, as impl/journal.go's
-- writeJournal writes them: the account's event counter moves by their number and stays
-- locked until the commit, and the rows take the positions it handed out, in
-- the order given. Its first argument is not p_account, so Citus does not
-- distribute it: it runs where its caller runs.
--
-- The rows count in list_counts (the journal's list, module 50, by author)
-- once for them all: the last stands for them in counted_as, the others for
-- none, and the trigger counts accordingly
-- (db/migrations/0077_journal_counted_once.sql).
CREATE OR REPLACE FUNCTION crm_journal_append(acc bigint, usr bigint, tok bigint, modules smallint[],
	entities text[], records bigint[], actions text[], changes jsonb[])
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	n int := coalesce(cardinality(entities), 0);
	last_position bigint;
	new_id bigint;
BEGIN
	IF n = 0 THEN
		RETURN;
	END IF;
	INSERT INTO event_counters AS ec (account_id, last) VALUES (acc, n)
	ON CONFLICT (account_id) DO UPDATE SET last = ec.last + excluded.last
	RETURNING ec.last INTO last_position;
	FOR i IN 1 .. n LOOP
		new_id := nextval('journal_id_seq');
		INSERT INTO journal (account_id, id, user_id, token_id, module, entity, record_id, action, changes, position, counted_as)
		OVERRIDING SYSTEM VALUE
		VALUES (acc, new_id, usr, tok, modules[i], entities[i], records[i], actions[i], changes[i], last_position - n + i,
			CASE WHEN i = n THEN n ELSE 0 END);
	END LOOP;
END
$fn$;
