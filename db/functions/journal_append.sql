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
--
-- The rows go in four to a statement, INSERT ... VALUES of four rows (then
-- of three, two or one for the rest): on Citus each statement costs its own
-- distributed execution on top of the shard's insert, and a multi-row
-- VALUES of one account is routed, and its plan kept, as a single row is.
CREATE OR REPLACE FUNCTION crm_journal_append(acc bigint, usr bigint, tok bigint, modules smallint[],
	entities text[], records bigint[], actions text[], changes jsonb[])
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	n int := coalesce(cardinality(entities), 0);
	last_position bigint;
	ids bigint[];
	positions bigint[];
	counted int[]; -- counted_as of each row
	i int := 1;    -- the first row not inserted yet
BEGIN
	IF n = 0 THEN
		RETURN;
	END IF;
	INSERT INTO event_counters AS ec (account_id, last) VALUES (acc, n)
	ON CONFLICT (account_id) DO UPDATE SET last = ec.last + excluded.last
	RETURNING ec.last INTO last_position;
	FOR k IN 1 .. n LOOP
		ids[k] := nextval('journal_id_seq');
		positions[k] := last_position - n + k;
		counted[k] := CASE WHEN k = n THEN n ELSE 0 END;
	END LOOP;
	WHILE n - i >= 3 LOOP
		INSERT INTO journal (account_id, id, user_id, token_id, module, entity, record_id, action, changes, position, counted_as)
		OVERRIDING SYSTEM VALUE VALUES
			(acc, ids[i], usr, tok, modules[i], entities[i], records[i], actions[i], changes[i], positions[i], counted[i]),
			(acc, ids[i+1], usr, tok, modules[i+1], entities[i+1], records[i+1], actions[i+1], changes[i+1], positions[i+1], counted[i+1]),
			(acc, ids[i+2], usr, tok, modules[i+2], entities[i+2], records[i+2], actions[i+2], changes[i+2], positions[i+2], counted[i+2]),
			(acc, ids[i+3], usr, tok, modules[i+3], entities[i+3], records[i+3], actions[i+3], changes[i+3], positions[i+3], counted[i+3]);
		i := i + 4;
	END LOOP;
	IF n - i = 2 THEN
		INSERT INTO journal (account_id, id, user_id, token_id, module, entity, record_id, action, changes, position, counted_as)
		OVERRIDING SYSTEM VALUE VALUES
			(acc, ids[i], usr, tok, modules[i], entities[i], records[i], actions[i], changes[i], positions[i], counted[i]),
			(acc, ids[i+1], usr, tok, modules[i+1], entities[i+1], records[i+1], actions[i+1], changes[i+1], positions[i+1], counted[i+1]),
			(acc, ids[i+2], usr, tok, modules[i+2], entities[i+2], records[i+2], actions[i+2], changes[i+2], positions[i+2], counted[i+2]);
	ELSIF n - i = 1 THEN
		INSERT INTO journal (account_id, id, user_id, token_id, module, entity, record_id, action, changes, position, counted_as)
		OVERRIDING SYSTEM VALUE VALUES
			(acc, ids[i], usr, tok, modules[i], entities[i], records[i], actions[i], changes[i], positions[i], counted[i]),
			(acc, ids[i+1], usr, tok, modules[i+1], entities[i+1], records[i+1], actions[i+1], changes[i+1], positions[i+1], counted[i+1]);
	ELSIF n - i = 0 THEN
		INSERT INTO journal (account_id, id, user_id, token_id, module, entity, record_id, action, changes, position, counted_as)
		OVERRIDING SYSTEM VALUE VALUES
			(acc, ids[i], usr, tok, modules[i], entities[i], records[i], actions[i], changes[i], positions[i], counted[i]);
	END IF;
END
$fn$;
