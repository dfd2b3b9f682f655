-- POST /task/insert (impl/tasks.go, TaskInsert): a task and its journal row
-- in one call (its own transaction, or a savepoint's part of the
-- Idempotency-Key's).
--
-- Every statement reads or writes one table with the account as its first
-- condition or value (docs/scale-out.md, "Functions of fast-path
-- statements"). It refuses, writing nothing, with o_error:
--   'inactive' when p_check_user and the responsible user p_responsible is
--              deactivated (impl/users_active.go, refuseInactiveUser);
--   'company'  when the counterparty is missing, deleted or not the caller's
--              to see (impl/access.go, checkCompany);
--   'deal'     when a deal is given that is missing, not the caller's to see
--              or of another counterparty (impl/access.go, checkDealOfCompany).
-- The dates are local times of the caller's time zone p_tz; a task inserted
-- as done (status 2) was done now. The stored times come back as JSON texts.
-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_task_insert(bigint, bigint, text, bigint, text, bigint, boolean, bigint, bigint, bigint, bigint, text, bigint, smallint, timestamp, timestamp, boolean, integer, text[], jsonb);

CREATE OR REPLACE FUNCTION crm_task_insert(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_check_user boolean, p_responsible bigint, p_company bigint, p_deal bigint, p_contact bigint,
	p_note text, p_type bigint, p_status smallint, p_start timestamp, p_finish timestamp, p_is_hot boolean,
	p_reminder integer, p_tags text[], p_journal jsonb, p_budget_ms integer)
RETURNS TABLE (o_error text, o_id bigint, o_date_start text, o_date_finish text, o_done_at text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	responsible_active boolean;
	owner bigint;
	deal_company bigint;
	new_id bigint;
	started timestamptz;
	finished timestamptz;
	done timestamptz;
BEGIN
	IF p_check_user THEN
		SELECT u.active INTO responsible_active FROM users u WHERE u.account_id = p_account AND u.id = p_responsible;
		IF responsible_active = false THEN
			o_error := 'inactive';
			RETURN NEXT;
			RETURN;
		END IF;
	END IF;
	SELECT user_id INTO owner FROM companies WHERE account_id = p_account AND id = p_company AND deleted_at IS NULL;
	IF NOT FOUND OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, owner) THEN
		o_error := 'company';
		RETURN NEXT;
		RETURN;
	END IF;
	IF p_deal IS NOT NULL THEN
		SELECT company_id, user_id INTO deal_company, owner FROM deals WHERE account_id = p_account AND id = p_deal;
		IF NOT FOUND OR deal_company <> p_company OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, owner) THEN
			o_error := 'deal';
			RETURN NEXT;
			RETURN;
		END IF;
	END IF;

	new_id := nextval('tasks_id_seq');
	INSERT INTO tasks (account_id, id, company_id, deal_id, contact_id, note, type_id, status_id, user_id, assigner_id,
		date_start, date_finish, done_at, is_hot, reminder_minutes, tags)
	OVERRIDING SYSTEM VALUE
	VALUES (p_account, new_id, p_company, p_deal, p_contact, p_note, p_type, p_status, p_responsible, p_user,
		coalesce(p_start AT TIME ZONE p_tz, now()), p_finish AT TIME ZONE p_tz,
		CASE WHEN p_status = 2 THEN now() END, p_is_hot, p_reminder, p_tags)
	RETURNING date_start, date_finish, done_at INTO started, finished, done;
	o_id := new_id;
	o_date_start := to_json(started)::text;
	o_date_finish := to_json(finished)::text;
	o_done_at := to_json(done)::text;

	PERFORM crm_journal_append(p_account, p_user, p_token, ARRAY[2::smallint], ARRAY['task'], ARRAY[new_id], ARRAY['insert'],
		ARRAY[p_journal || jsonb_build_object('date_start', to_jsonb(started))
		                || jsonb_strip_nulls(jsonb_build_object('date_finish', to_jsonb(finished), 'done_at', to_jsonb(done)))]) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	RETURN NEXT;
END
$fn$;
