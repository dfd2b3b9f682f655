-- GET /contact/list (impl/contacts.go, ContactList): a page of the contact
-- persons of the live counterparties the caller sees, newest first, with their
-- total; or, with p_company, every contact person of that counterparty (NULL
-- rows when it is missing, deleted or not the caller's to see).
--
-- A contact person is shown with their counterparty, so the page depends on the
-- counterparties of the contact persons. Every statement reads one table
-- (docs/scale-out.md): the contact persons are read newest first in batches,
-- their counterparties checked by a statement of their own, and the batches
-- go on until the page is full, as a join would read them. With a name, all
-- the contact persons it matches are read at once (through the trigram index)
-- and their counterparties checked together, since the total counts them all.
CREATE OR REPLACE FUNCTION crm_contact_list(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_name text, p_company bigint, p_limit bigint, p_offset bigint)
RETURNS TABLE (rows bigint, value text) LANGUAGE plpgsql STABLE AS $fn$
DECLARE
	visible bigint[];       -- NULL: every user's records
	total bigint;
	wanted bigint := p_offset + p_limit;
	matched bigint[] := '{}'; -- the contact persons shown, newest first
	ids bigint[];
	company_ids bigint[];
	shown bigint[];         -- the counterparties they may be shown with
	batch bigint := greatest(2 * (p_offset + p_limit), 100);
	below bigint := NULL;   -- the batches read the contact persons below this id
	r record;
	n int;
	page bigint[];
	company_names jsonb;
	names jsonb;
	phone_lists jsonb;
	email_lists jsonb;
	social_lists jsonb;
	v json;
BEGIN
	-- impl/access.go, seesOwner: an admin sees every user's records, a head
	-- those of the users of their department and their own, anyone else their own.
	IF p_role = 'admin' THEN
		visible := NULL;
	ELSIF p_role = 'head' AND p_dept IS NOT NULL THEN
		SELECT array_agg(id) INTO visible FROM users WHERE account_id = p_account AND (id = p_user OR department_id = p_dept);
	ELSE
		visible := ARRAY[p_user];
	END IF;

	IF p_company IS NOT NULL THEN
		PERFORM FROM companies WHERE account_id = p_account AND id = p_company AND deleted_at IS NULL
		                         AND (visible IS NULL OR user_id = ANY (visible));
		IF NOT FOUND THEN
			RETURN; -- no row: the counterparty is not found
		END IF;
		SELECT array_agg(id ORDER BY id DESC) INTO page FROM contacts WHERE account_id = p_account AND company_id = p_company;
		page := coalesce(page, '{}');
		total := cardinality(page);
	ELSIF p_name <> '' THEN
		SELECT array_agg(id ORDER BY id DESC), array_agg(company_id ORDER BY id DESC) INTO ids, company_ids
		  FROM contacts WHERE account_id = p_account AND name ILIKE '%' || p_name || '%';
		SELECT array_agg(id) INTO shown
		  FROM companies WHERE account_id = p_account AND id = ANY (company_ids) AND deleted_at IS NULL
		                   AND (visible IS NULL OR user_id = ANY (visible));
		matched := ARRAY(SELECT u.id FROM unnest(ids, company_ids) WITH ORDINALITY AS u (id, company_id, k)
		                  WHERE u.company_id = ANY (shown) ORDER BY u.k);
		total := cardinality(matched);
		page := matched[p_offset + 1 : p_offset + p_limit];
	ELSE
		-- The maintained count of the contact persons of the live
		-- counterparties of each owner (db/migrations/0065_contact_items.sql).
		SELECT coalesce(sum(l.n), 0) INTO total FROM list_counts l
		 WHERE account_id = p_account AND module = 1 AND kind = 1 AND (visible IS NULL OR owner_id = ANY (visible));
		LOOP
			ids := '{}';
			company_ids := '{}';
			-- Two statements, so that each reads the primary key backwards from
			-- where it starts and stops at the batch's end.
			IF below IS NULL THEN
				FOR r IN SELECT id, company_id FROM contacts WHERE account_id = p_account ORDER BY id DESC LIMIT batch LOOP
					ids := ids || r.id;
					company_ids := company_ids || r.company_id;
				END LOOP;
			ELSE
				FOR r IN SELECT id, company_id FROM contacts WHERE account_id = p_account AND id < below ORDER BY id DESC LIMIT batch LOOP
					ids := ids || r.id;
					company_ids := company_ids || r.company_id;
				END LOOP;
			END IF;
			n := cardinality(ids);
			EXIT WHEN n = 0;
			SELECT array_agg(id) INTO shown
			  FROM companies WHERE account_id = p_account AND id = ANY (company_ids) AND deleted_at IS NULL
			                   AND (visible IS NULL OR user_id = ANY (visible));
			matched := matched || ARRAY(SELECT u.id FROM unnest(ids, company_ids) WITH ORDINALITY AS u (id, company_id, k)
			                             WHERE u.company_id = ANY (shown) ORDER BY u.k);
			EXIT WHEN cardinality(matched) >= wanted OR n < batch;
			below := ids[n];
			batch := batch * 2;
		END LOOP;
		page := matched[p_offset + 1 : p_offset + p_limit];
	END IF;

	IF cardinality(page) = 0 THEN
		RETURN QUERY SELECT total, '[]'::text;
		RETURN;
	END IF;
	SELECT array_agg(DISTINCT company_id) INTO company_ids FROM contacts WHERE account_id = p_account AND id = ANY (page);
	SELECT jsonb_object_agg(id, name) INTO company_names FROM companies WHERE account_id = p_account AND id = ANY (company_ids);
	SELECT jsonb_object_agg(id, name) INTO names FROM directory_values WHERE account_id = p_account AND directory_code IN (42, 43);
	-- Each contact person's items, read once for the page and grouped by
	-- contact person (company_get.sql does the same for a card).
	SELECT jsonb_object_agg(contact_id, json_agg(ROW(id, company_id, contact_id, phone, descr)::crm_phone_item ORDER BY id)::text) OVER ()
	  INTO phone_lists
	  FROM phones WHERE account_id = p_account AND contact_id IS NOT NULL AND contact_id = ANY (page)
	 GROUP BY contact_id LIMIT 1;
	SELECT jsonb_object_agg(contact_id, json_agg(ROW(id, company_id, contact_id, email)::crm_email_item ORDER BY id)::text) OVER ()
	  INTO email_lists
	  FROM emails WHERE account_id = p_account AND contact_id IS NOT NULL AND contact_id = ANY (page)
	 GROUP BY contact_id LIMIT 1;
	SELECT jsonb_object_agg(contact_id, json_agg(ROW(id, network, address)::crm_social_item ORDER BY id)::text) OVER ()
	  INTO social_lists
	  FROM contact_socials WHERE account_id = p_account AND contact_id = ANY (page)
	 GROUP BY contact_id LIMIT 1;
	SELECT json_agg(ROW(id, company_id, company_names ->> company_id::text, name, first_name, middle_name, last_name,
	           position_id, coalesce(names ->> position_id::text, ''), status_id, coalesce(names ->> status_id::text, ''),
	           note, to_char(created_at AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
	           coalesce((phone_lists ->> id::text)::json, '[]'),
	           coalesce((email_lists ->> id::text)::json, '[]'),
	           coalesce((social_lists ->> id::text)::json, '[]'))::crm_contact_item ORDER BY id DESC)
	  INTO v
	  FROM contacts WHERE account_id = p_account AND id = ANY (page);
	RETURN QUERY SELECT total, coalesce(v::text, '[]');
END
$fn$;
