-- POST /deal/update (impl/deals.go, DealUpdate): the passed fields of a deal
-- and the journal row of what changed, in one call (its own transaction, or a
-- savepoint's part of the Idempotency-Key's).
--
-- p_set maps each passed field (a numeric field equal to 0 counts as not
-- passed, and impl/deals.go leaves it out) to its new value: name, company_id,
-- contact_id, type_id, status_id, user_id, sum (as text), date_start,
-- date_finish, note, tags. Every statement reads or writes one table with
-- the account as its first condition (docs/scale-out.md, "Functions of
-- fast-path statements"). It refuses, writing nothing, with o_error:
--   'inactive' when p_check_user and the new responsible user is deactivated
--              (impl/users_active.go, refuseInactiveUser);
--   'deal'     when the deal is missing or not the caller's to see;
--   'company'  when a new counterparty is missing, deleted or not the
--              caller's to see (impl/access.go, checkCompany).
-- A new counterparty takes the contact person off the deal, unless one is
-- passed: they belonged to the old one. The journal row maps each field that
-- differs to [old, new], as impl/deals.go's dealChanges did; it is written
-- even when nothing differs.
-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_deal_update(bigint, bigint, text, bigint, text, bigint, boolean, bigint, jsonb);

CREATE OR REPLACE FUNCTION crm_deal_update(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_check_user boolean, p_id bigint, p_set jsonb, p_budget_ms integer)
RETURNS TABLE (o_error text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	responsible_active boolean;
	d deals;
	owner bigint;
	old_row jsonb;
	new_row jsonb;
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
	SELECT * INTO d FROM deals WHERE account_id = p_account AND id = p_id FOR UPDATE;
	IF NOT FOUND OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, d.user_id) THEN
		o_error := 'deal';
		RETURN NEXT;
		RETURN;
	END IF;
	old_row := jsonb_build_object('name', d.name, 'company_id', d.company_id, 'contact_id', d.contact_id,
		'type_id', d.type_id, 'status_id', d.status_id, 'user_id', d.user_id,
		'date_start', to_char(d.date_start, 'YYYY-MM-DD'), 'date_finish', to_char(d.date_finish, 'YYYY-MM-DD'),
		'sum', d.sum, 'note', d.note, 'tags', d.tags);

	IF p_set ? 'company_id' AND (p_set ->> 'company_id')::bigint <> d.company_id THEN
		SELECT user_id INTO owner FROM companies
		 WHERE account_id = p_account AND id = (p_set ->> 'company_id')::bigint AND deleted_at IS NULL;
		IF NOT FOUND OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, owner) THEN
			o_error := 'company';
			RETURN NEXT;
			RETURN;
		END IF;
		d.company_id := (p_set ->> 'company_id')::bigint;
		d.contact_id := NULL;
	END IF;
	IF p_set ? 'contact_id' THEN
		d.contact_id := (p_set ->> 'contact_id')::bigint;
	END IF;
	IF p_set ? 'type_id' THEN d.type_id := (p_set ->> 'type_id')::bigint; END IF;
	IF p_set ? 'status_id' THEN d.status_id := (p_set ->> 'status_id')::bigint; END IF;
	IF p_set ? 'user_id' THEN d.user_id := (p_set ->> 'user_id')::bigint; END IF;
	IF p_set ? 'name' THEN d.name := p_set ->> 'name'; END IF;
	IF p_set ? 'note' THEN d.note := p_set ->> 'note'; END IF;
	IF p_set ? 'sum' THEN d.sum := (p_set ->> 'sum')::numeric; END IF;
	IF p_set ? 'date_start' THEN d.date_start := (p_set ->> 'date_start')::date; END IF;
	IF p_set ? 'date_finish' THEN d.date_finish := (p_set ->> 'date_finish')::date; END IF;
	IF p_set ? 'tags' THEN d.tags := ARRAY(SELECT jsonb_array_elements_text(p_set -> 'tags')); END IF;

	UPDATE deals SET name = d.name, company_id = d.company_id, contact_id = d.contact_id, type_id = d.type_id,
		status_id = d.status_id, user_id = d.user_id, date_start = d.date_start, date_finish = d.date_finish,
		sum = d.sum, note = d.note, tags = d.tags, updated_at = now()
	 WHERE account_id = p_account AND id = p_id
	RETURNING * INTO d;
	new_row := jsonb_build_object('name', d.name, 'company_id', d.company_id, 'contact_id', d.contact_id,
		'type_id', d.type_id, 'status_id', d.status_id, 'user_id', d.user_id,
		'date_start', to_char(d.date_start, 'YYYY-MM-DD'), 'date_finish', to_char(d.date_finish, 'YYYY-MM-DD'),
		'sum', d.sum, 'note', d.note, 'tags', d.tags);
	SELECT coalesce(jsonb_object_agg(n.key, jsonb_build_array(old_row -> n.key, n.value)), '{}') INTO changed
	  FROM jsonb_each(new_row) AS n
	 WHERE old_row -> n.key IS DISTINCT FROM n.value;
	PERFORM crm_journal_append(p_account, p_user, p_token, ARRAY[20::smallint], ARRAY['deal'], ARRAY[p_id],
		ARRAY['update'], ARRAY[changed]) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	RETURN NEXT;
END
$fn$;
