-- POST /contact/insert (impl/contacts.go, ContactInsert): a contact person of
-- the counterparty p_company with their e-mails and phones and the journal
-- rows, in one call (its own transaction, or a savepoint's part of the
-- Idempotency-Key's).
--
-- Every statement reads or writes one table with the account as its first
-- condition or value (docs/scale-out.md, "Functions of fast-path
-- statements"). The counterparty must be one the caller sees
-- (impl/access.go, seesCompany); else the function returns o_found false and
-- writes nothing. The e-mails' advisory locks follow (impl/companies.go,
-- lockEmails), as in every writer of e-mails. A position given by name is
-- found or added in directory 42 (impl/directories.go, positionID).
-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_contact_insert(bigint, bigint, text, bigint, text, bigint, bigint, text, text, text, text, bigint, text, integer, text[], text[], text[], text[]);

CREATE OR REPLACE FUNCTION crm_contact_insert(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_company bigint, p_first text, p_middle text, p_last text, p_position text, p_status bigint,
	p_note text, p_lock_space integer, p_lock_keys text[], p_emails text[], p_numbers text[], p_descrs text[], p_budget_ms integer)
RETURNS TABLE (o_found boolean, o_id bigint, o_email_ids bigint[], o_phone_ids bigint[])
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	owner bigint;
	position_ref bigint;
	new_id bigint;
	item_id bigint;
	entities text[];
	records bigint[];
	changes jsonb[];
BEGIN
	SELECT user_id INTO owner FROM companies WHERE account_id = p_account AND id = p_company AND deleted_at IS NULL;
	o_found := FOUND AND (p_role = 'admin' OR owner = p_user);
	IF NOT o_found AND owner IS NOT NULL AND p_role = 'head' AND p_dept IS NOT NULL THEN
		PERFORM FROM users WHERE account_id = p_account AND id = owner AND department_id = p_dept;
		o_found := FOUND;
	END IF;
	IF NOT o_found THEN
		RETURN NEXT;
		RETURN;
	END IF;

	PERFORM pg_advisory_xact_lock(p_lock_space, hashtext(k.key))
	   FROM unnest(p_lock_keys) WITH ORDINALITY AS k (key, n)
	  ORDER BY k.n;

	IF p_position <> '' THEN
		position_ref := nextval('directory_values_id_seq');
		INSERT INTO directory_values (account_id, id, directory_code, name) OVERRIDING SYSTEM VALUE
		VALUES (p_account, position_ref, 42, p_position)
		ON CONFLICT (account_id, directory_code, lower(name)) DO UPDATE SET active = true
		RETURNING id INTO position_ref;
	END IF;

	new_id := nextval('contacts_id_seq');
	INSERT INTO contacts (account_id, id, company_id, first_name, middle_name, last_name, position_id, status_id, note, created_by)
	OVERRIDING SYSTEM VALUE
	VALUES (p_account, new_id, p_company, p_first, p_middle, p_last, position_ref, p_status, p_note, p_user);
	entities := ARRAY['contact'];
	records := ARRAY[new_id];
	changes := ARRAY[jsonb_build_object('company_id', p_company, 'first_name', p_first, 'middle_name', p_middle,
		'last_name', p_last, 'position', p_position, 'position_id', position_ref, 'status_id', p_status, 'note', p_note)];

	o_email_ids := '{}';
	FOR i IN 1 .. coalesce(cardinality(p_emails), 0) LOOP
		item_id := nextval('emails_id_seq');
		INSERT INTO emails (account_id, id, company_id, contact_id, email) OVERRIDING SYSTEM VALUE
		VALUES (p_account, item_id, p_company, new_id, p_emails[i]);
		o_email_ids := o_email_ids || item_id;
		entities := entities || 'email'::text;
		records := records || item_id;
		changes := changes || jsonb_build_object('company_id', p_company, 'contact_id', new_id, 'email', p_emails[i]);
	END LOOP;
	o_phone_ids := '{}';
	FOR i IN 1 .. coalesce(cardinality(p_numbers), 0) LOOP
		item_id := nextval('phones_id_seq');
		INSERT INTO phones (account_id, id, company_id, contact_id, phone, descr) OVERRIDING SYSTEM VALUE
		VALUES (p_account, item_id, p_company, new_id, p_numbers[i], p_descrs[i]);
		o_phone_ids := o_phone_ids || item_id;
		entities := entities || 'phone'::text;
		records := records || item_id;
		changes := changes || jsonb_build_object('company_id', p_company, 'contact_id', new_id, 'phone', p_numbers[i], 'descr', p_descrs[i]);
	END LOOP;

	PERFORM crm_journal_append(p_account, p_user, p_token, array_fill(1::smallint, ARRAY[cardinality(entities)]),
		entities, records, array_fill('insert'::text, ARRAY[cardinality(entities)]), changes) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	o_id := new_id;
	RETURN NEXT;
END
$fn$;
