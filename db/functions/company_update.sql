-- POST /company/update (impl/companies.go, CompanyUpdate): the passed fields
-- of a counterparty and the journal row of what changed, in one call (its own
-- transaction, or a savepoint's part of the Idempotency-Key's).
--
-- p_set maps each passed column to its new value (JSON null clears a
-- directory reference); impl/companies.go builds it, and only its columns
-- change. Every statement reads or writes one table with the account as its
-- first condition (docs/scale-out.md, "Functions of fast-path statements").
-- It refuses, writing nothing, with o_error:
--   'inactive' when p_check_user and the new responsible user is deactivated
--              (impl/users_active.go, refuseInactiveUser);
--   'company'  when the counterparty is missing, deleted or not the caller's
--              to see (impl/access.go, seesCompany).
-- When every passed value is the stored one it writes nothing either and
-- succeeds. FOR NO KEY UPDATE: the row is read and changed under one lock,
-- while inserts of its phones, e-mails and contacts (whose foreign keys take
-- KEY SHARE) go on.
-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_company_update(bigint, bigint, text, bigint, text, bigint, boolean, bigint, jsonb);

CREATE OR REPLACE FUNCTION crm_company_update(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_check_user boolean, p_id bigint, p_set jsonb, p_budget_ms integer)
RETURNS TABLE (o_error text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	responsible_active boolean;
	c companies;
	stored jsonb;
	changed jsonb;
BEGIN
	IF p_check_user THEN
		SELECT u.active INTO responsible_active FROM users u
		 WHERE u.account_id = p_account AND u.id = (p_set ->> 'user_id')::bigint;
		IF responsible_active = false THEN
			o_error := 'inactive';
			RETURN NEXT;
			RETURN;
		END IF;
	END IF;
	SELECT * INTO c FROM companies WHERE account_id = p_account AND id = p_id AND deleted_at IS NULL FOR NO KEY UPDATE;
	IF NOT FOUND OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, c.user_id) THEN
		o_error := 'company';
		RETURN NEXT;
		RETURN;
	END IF;

	stored := to_jsonb(c);
	SELECT jsonb_object_agg(s.key, jsonb_build_array(stored -> s.key, s.value)) INTO changed
	  FROM jsonb_each(p_set) AS s
	 WHERE stored -> s.key IS DISTINCT FROM s.value;
	IF changed IS NULL THEN
		RETURN NEXT; -- the passed values are the stored ones: nothing to write
		RETURN;
	END IF;

	c := jsonb_populate_record(c, p_set);
	-- Every column the update may change (impl/companies.go, companyChanges);
	-- the triggers of companies compare old and new values, so the columns
	-- set to what they hold change nothing.
	UPDATE companies SET name = c.name, person = c.person, first_name = c.first_name, middle_name = c.middle_name,
		last_name = c.last_name, address = c.address, city = c.city, region = c.region, country = c.country,
		url = c.url, activity_type = c.activity_type, property_form = c.property_form, info_source = c.info_source,
		note = c.note, tags = c.tags, external_code = c.external_code, type_id = c.type_id, status_id = c.status_id,
		category_id = c.category_id, group_id = c.group_id, agent_id = c.agent_id, user_id = c.user_id,
		updated_at = now()
	 WHERE account_id = p_account AND id = p_id;
	PERFORM crm_journal_append(p_account, p_user, p_token, ARRAY[1::smallint], ARRAY['company'], ARRAY[p_id],
		ARRAY['update'], ARRAY[changed]) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	RETURN NEXT;
END
$fn$;
