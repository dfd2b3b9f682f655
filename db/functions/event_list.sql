-- GET /event/list (impl/events.go, EventList) where the functions serve
-- (impl.Config.FastPath): one page of the event feed after position p_after,
-- as the statement of impl/events.go reads it: the events past the cursor
-- scanned (at most p_scan), the first p_limit of them that match the filters
-- (NULL: any module, any action) and that the caller sees (impl/access.go,
-- seesJournal), and their JSON.
--
-- Positions are dense per account (1, 2, 3, ...; migration 0030, and the
-- journal is never deleted from), so the events scanned after p_after are the
-- positions p_after + 1 .. p_after + p_scan that exist. Every statement reads
-- one table with the account as its first condition (docs/scale-out.md,
-- "Functions of fast-path statements"); the users' names are read into a map.
CREATE OR REPLACE FUNCTION crm_event_list(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_after bigint, p_scan integer, p_limit integer, p_modules smallint[], p_actions text[],
	OUT scanned integer, OUT last_scanned bigint, OUT matched integer, OUT last_matched bigint, OUT events text)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
	visible bigint[]; -- the users whose events a head or a member sees
	positions bigint[] := '{}';
	user_ids bigint[] := '{}';
	user_names jsonb;
	r record;
BEGIN
	SELECT count(*), coalesce(max(position), p_after) INTO scanned, last_scanned
	  FROM journal WHERE account_id = p_account AND position > p_after AND position <= p_after + p_scan;
	IF p_role = 'head' AND p_dept IS NOT NULL THEN
		SELECT array_agg(id) INTO visible FROM users WHERE account_id = p_account AND (id = p_user OR department_id = p_dept);
	ELSIF p_role <> 'admin' THEN
		visible := ARRAY[p_user];
	END IF;
	FOR r IN
		SELECT position, user_id FROM journal
		 WHERE account_id = p_account AND position > p_after AND position <= p_after + p_scan
		   AND (visible IS NULL OR user_id = ANY (visible))
		   AND (p_modules IS NULL OR module = ANY (p_modules))
		   AND (p_actions IS NULL OR action = ANY (p_actions))
		 ORDER BY position
		 LIMIT p_limit
	LOOP
		positions := positions || r.position;
		IF r.user_id IS NOT NULL THEN
			user_ids := user_ids || r.user_id;
		END IF;
	END LOOP;
	matched := cardinality(positions);
	last_matched := coalesce(positions[matched], 0);
	IF matched = 0 THEN
		events := '[]';
		RETURN;
	END IF;
	SELECT jsonb_object_agg(id, name) INTO user_names FROM users WHERE account_id = p_account AND id = ANY (user_ids);
	SELECT json_agg(json_build_object(
	           'id', id, 'date', to_char(at AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
	           'user_id', user_id, 'user_name', coalesce(user_names ->> user_id::text, ''), 'token_id', token_id,
	           'module', module, 'entity', entity, 'record_id', record_id, 'action', action,
	           'changes', changes) ORDER BY position)::text
	  INTO events
	  FROM journal WHERE account_id = p_account AND position = ANY (positions);
END
$fn$;
