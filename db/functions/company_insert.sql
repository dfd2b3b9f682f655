-- POST /company/insert (impl/companies.go, CompanyInsert), its common form: a
-- counterparty with its own e-mails and phones and their journal rows, after
-- the duplicate check when asked, in one call, which is its own transaction.
--
-- Every statement reads or writes one table with the account as its first
-- condition or value (docs/scale-out.md, "Functions of fast-path
-- statements"); rows are inserted one by one, by INSERT ... VALUES.
--
-- The e-mails' advisory locks (impl/companies.go, lockEmails: the same space
-- and keys as every other writer of e-mails) come first. The function is
-- VOLATILE, so each later statement takes a new snapshot: the duplicate check
-- sees the e-mails of a transaction it waited for.
--
-- It returns one row: o_inactive when the responsible user is deactivated
-- (nothing is written; checked before the duplicates, as the 400 comes before
-- the 409), else o_dup_* when an e-mail already belongs to a live counterparty
-- (the one with the lowest id; o_dup_visible tells whether the caller may see
-- its name; nothing is written), else o_id, the new counterparty.

-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_company_insert(bigint, bigint, text, bigint, text, bigint, integer, text[], jsonb, text[], text[], text[], text[], boolean, jsonb);

CREATE OR REPLACE FUNCTION crm_company_insert(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_lock_space integer, p_lock_keys text[], p_row jsonb, p_emails text[], p_lower text[],
	p_numbers text[], p_descrs text[], p_check boolean, p_journal jsonb, p_budget_ms integer)
RETURNS TABLE (o_inactive boolean, o_id bigint, o_dup_id bigint, o_dup_name text, o_dup_email text, o_dup_visible boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	r companies;
	inactive boolean;
	candidates bigint[];
	dup companies;
	new_id bigint;
	item_id bigint;
	entities text[] := ARRAY['company'];
	records bigint[];
	changes jsonb[] := ARRAY[p_journal];
BEGIN
	PERFORM pg_advisory_xact_lock(p_lock_space, hashtext(k.key))
	   FROM unnest(p_lock_keys) WITH ORDINALITY AS k (key, n)
	  ORDER BY k.n;

	r := jsonb_populate_record(NULL::companies, p_row);
	SELECT NOT active INTO inactive FROM users WHERE account_id = p_account AND id = r.user_id;
	IF inactive THEN
		o_inactive := true;
		RETURN NEXT;
		RETURN;
	END IF;
	o_inactive := false;

	IF p_check AND cardinality(p_lower) > 0 THEN
		SELECT array_agg(DISTINCT company_id) INTO candidates
		  FROM emails WHERE account_id = p_account AND lower(email) = ANY (p_lower);
		IF candidates IS NOT NULL THEN
			SELECT * INTO dup FROM companies
			 WHERE account_id = p_account AND id = ANY (candidates) AND deleted_at IS NULL
			 ORDER BY id LIMIT 1;
			IF FOUND THEN
				o_dup_id := dup.id;
				o_dup_name := dup.name;
				SELECT email INTO o_dup_email FROM emails
				 WHERE account_id = p_account AND company_id = dup.id AND lower(email) = ANY (p_lower)
				 ORDER BY id LIMIT 1;
				-- impl/access.go, seesOwner: an admin sees every counterparty, a
				-- head those of the users of their department, anyone their own.
				o_dup_visible := p_role = 'admin' OR dup.user_id = p_user;
				IF NOT o_dup_visible AND p_role = 'head' AND p_dept IS NOT NULL THEN
					PERFORM FROM users WHERE account_id = p_account AND id = dup.user_id AND department_id = p_dept;
					o_dup_visible := FOUND;
				END IF;
				RETURN NEXT;
				RETURN;
			END IF;
		END IF;
	END IF;

	-- The columns of impl/companies.go's companyRow (TestCompanyInsertFunctionColumns).
	-- The ids are drawn first and given with the row: a statement that draws one
	-- itself (an identity default) holds a volatile function, and Citus plans
	-- such a statement afresh at every execution (docs/scale-out.md, "Functions
	-- of fast-path statements"). The same in every function that inserts.
	new_id := nextval('companies_id_seq');
	INSERT INTO companies (account_id, id, name, person, first_name, middle_name, last_name, address, city, region, country,
		url, activity_type, property_form, info_source, note, tags, external_code, type_id, status_id, category_id,
		group_id, agent_id, user_id, which_site_source, which_host_source, which_link_source, utm_campaign,
		utm_source, utm_medium, utm_content, utm_term, created_via, created_by)
	OVERRIDING SYSTEM VALUE
	VALUES (p_account, new_id, r.name, r.person, r.first_name, r.middle_name, r.last_name, r.address, r.city, r.region, r.country,
		r.url, r.activity_type, r.property_form, r.info_source, r.note, coalesce(r.tags, '{}'), r.external_code, r.type_id, r.status_id, r.category_id,
		r.group_id, r.agent_id, r.user_id, r.which_site_source, r.which_host_source, r.which_link_source, r.utm_campaign,
		r.utm_source, r.utm_medium, r.utm_content, r.utm_term, r.created_via, r.created_by);
	records := ARRAY[new_id];

	FOR i IN 1 .. coalesce(cardinality(p_emails), 0) LOOP
		item_id := nextval('emails_id_seq');
		INSERT INTO emails (account_id, id, company_id, contact_id, email) OVERRIDING SYSTEM VALUE
		VALUES (p_account, item_id, new_id, NULL, p_emails[i]);
		entities := entities || 'email'::text;
		records := records || item_id;
		changes := changes || jsonb_build_object('company_id', new_id, 'contact_id', NULL, 'email', p_emails[i]);
	END LOOP;
	FOR i IN 1 .. coalesce(cardinality(p_numbers), 0) LOOP
		item_id := nextval('phones_id_seq');
		INSERT INTO phones (account_id, id, company_id, contact_id, phone, descr) OVERRIDING SYSTEM VALUE
		VALUES (p_account, item_id, new_id, NULL, p_numbers[i], p_descrs[i]);
		entities := entities || 'phone'::text;
		records := records || item_id;
		changes := changes || jsonb_build_object('company_id', new_id, 'contact_id', NULL, 'phone', p_numbers[i], 'descr', p_descrs[i]);
	END LOOP;

	PERFORM crm_journal_append(p_account, p_user, p_token, array_fill(1::smallint, ARRAY[cardinality(entities)]),
		entities, records, array_fill('insert'::text, ARRAY[cardinality(entities)]), changes) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	o_id := new_id;
	RETURN NEXT;
END
$fn$;
