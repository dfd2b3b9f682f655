-- GET /company/get (impl/companies.go, CompanyGet): the card of the
-- counterparty p_id as the caller sees it, as one JSON text, or NULL when it is
-- missing, deleted or not the caller's to see.
--
-- Every statement reads one table with the account as its first condition
-- (docs/scale-out.md, "Functions of fast-path statements"): the names the card
-- shows are read into maps first and looked up by the statements that build
-- the objects. The e-mails and phones of the counterparty are read once, by
-- contact person (NULL for its own): the card lists them all in that order,
-- and each contact person's object takes their own group.
CREATE OR REPLACE FUNCTION crm_company_get(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text, p_id bigint)
RETURNS text LANGUAGE plpgsql STABLE AS $fn$
DECLARE
	c companies;
	contact_ids bigint[];
	names jsonb;        -- directory value id -> name
	user_names jsonb;   -- user id -> name
	additional jsonb;   -- ADD_name -> value
	email_lists jsonb;  -- contact id (0: the counterparty) -> JSON array of e-mails
	phone_lists jsonb;  -- the same for phones
	social_lists jsonb; -- contact id -> JSON array of social networks
	emails text;        -- every e-mail, as the members of a JSON array
	phones text;
	requisites json;
	contacts json;
BEGIN
	SELECT * INTO c FROM companies WHERE account_id = p_account AND id = p_id AND deleted_at IS NULL;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	-- impl/access.go, seesCompany: an admin sees every counterparty, a head
	-- those of the users of their department, anyone their own.
	IF p_role <> 'admin' AND c.user_id <> p_user THEN
		IF p_role <> 'head' OR p_dept IS NULL THEN
			RETURN NULL;
		END IF;
		PERFORM FROM users WHERE account_id = p_account AND id = c.user_id AND department_id = p_dept;
		IF NOT FOUND THEN
			RETURN NULL;
		END IF;
	END IF;

	SELECT array_agg(id) INTO contact_ids FROM contacts WHERE account_id = p_account AND company_id = p_id;
	SELECT jsonb_object_agg(id, name) INTO names
	  FROM directory_values
	 WHERE account_id = p_account
	   AND (id = ANY (ARRAY[c.type_id, c.status_id, c.category_id, c.group_id, c.agent_id])
	        OR contact_ids IS NOT NULL AND directory_code IN (42, 43)); -- the positions and statuses of contact persons
	SELECT jsonb_object_agg(id, name) INTO user_names
	  FROM users WHERE account_id = p_account AND id = ANY (ARRAY[c.user_id, c.created_by]);
	SELECT jsonb_object_agg('ADD_' || name, c.extra -> name) INTO additional
	  FROM field_definitions WHERE account_id = p_account AND module = 1;

	-- One group per contact person and one for the counterparty's own, in the
	-- card's order (contact_id NULLS FIRST, id): the window gathers the map of
	-- the groups and the members of all of them.
	SELECT jsonb_object_agg(coalesce(contact_id, 0), json_agg(ROW(id, company_id, contact_id, email)::crm_email_item ORDER BY id)::text) OVER w,
	       string_agg(substr(json_agg(ROW(id, company_id, contact_id, email)::crm_email_item ORDER BY id)::text, 2,
	                         length(json_agg(ROW(id, company_id, contact_id, email)::crm_email_item ORDER BY id)::text) - 2), ',') OVER w
	  INTO email_lists, emails
	  FROM emails WHERE account_id = p_account AND company_id = p_id
	 GROUP BY contact_id
	WINDOW w AS (ORDER BY contact_id NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
	 LIMIT 1;
	SELECT jsonb_object_agg(coalesce(contact_id, 0), json_agg(ROW(id, company_id, contact_id, phone, descr)::crm_phone_item ORDER BY id)::text) OVER w,
	       string_agg(substr(json_agg(ROW(id, company_id, contact_id, phone, descr)::crm_phone_item ORDER BY id)::text, 2,
	                         length(json_agg(ROW(id, company_id, contact_id, phone, descr)::crm_phone_item ORDER BY id)::text) - 2), ',') OVER w
	  INTO phone_lists, phones
	  FROM phones WHERE account_id = p_account AND company_id = p_id
	 GROUP BY contact_id
	WINDOW w AS (ORDER BY contact_id NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
	 LIMIT 1;

	SELECT jsonb_agg(jsonb_build_object('id', id, 'id_company', company_id,
	           'use_default', CASE WHEN is_default THEN 'True' ELSE 'False' END,
	           'inn', inn, 'kpp', kpp, 'ogrn_client', ogrn_client, 'okpo', okpo, 'okved', okved,
	           'oktmo', oktmo, 'okato', okato, 'kr_name', kr_name, 'full_name', full_name,
	           'adres_yur', adres_yur, 'adres_fact', adres_fact, 'pocht_adr', pocht_adr,
	           'dir_name', dir_name, 'dir_status', dir_status, 'gl_buh', gl_buh,
	           'bank_name', bank_name, 'bik', bik, 'ks', ks, 'rs', rs, 'requis_prim', requis_prim)
	         ORDER BY is_default DESC, id)
	  INTO requisites
	  FROM requisites WHERE account_id = p_account AND company_id = p_id;

	IF contact_ids IS NOT NULL THEN
		SELECT jsonb_object_agg(contact_id, json_agg(ROW(id, network, address)::crm_social_item ORDER BY id)::text) OVER ()
		  INTO social_lists
		  FROM contact_socials WHERE account_id = p_account AND contact_id = ANY (contact_ids)
		 GROUP BY contact_id
		 LIMIT 1;
		SELECT json_agg(ROW(id, company_id, c.name, name, first_name, middle_name, last_name,
		           position_id, coalesce(names ->> position_id::text, ''), status_id, coalesce(names ->> status_id::text, ''),
		           note, to_char(created_at AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
		           coalesce((phone_lists ->> id::text)::json, '[]'),
		           coalesce((email_lists ->> id::text)::json, '[]'),
		           coalesce((social_lists ->> id::text)::json, '[]'))::crm_contact_item ORDER BY id)
		  INTO contacts
		  FROM contacts WHERE account_id = p_account AND company_id = p_id;
	END IF;

	RETURN json_build_object(
		'company', jsonb_build_object(
			'id', c.id, 'name', c.name, 'address', c.address,
			'created', to_char(c.created_at AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
			'city', c.city, 'region', c.region, 'country', c.country, 'activity_type', c.activity_type,
			'property_form', c.property_form, 'type_id', c.type_id, 'type', coalesce(names ->> c.type_id::text, ''),
			'created_by', coalesce(user_names ->> c.created_by::text, c.created_via), 'info_source', c.info_source,
			'first_name', c.first_name, 'middle_name', c.middle_name, 'last_name', c.last_name, 'url', c.url,
			'user_id', c.user_id, 'user_name', coalesce(user_names ->> c.user_id::text, ''), 'person', c.person, 'note', c.note,
			'external_code', c.external_code, 'category_id', c.category_id, 'category', coalesce(names ->> c.category_id::text, ''),
			'status_id', c.status_id, 'status', coalesce(names ->> c.status_id::text, ''), 'agent_id', c.agent_id,
			'agent', coalesce(names ->> c.agent_id::text, ''), 'group_id', c.group_id, 'group', coalesce(names ->> c.group_id::text, ''))
		|| jsonb_build_object('tax_id', c.tax_id, 'tags', array_to_string(c.tags, ','),
			'which_site_source', c.which_site_source, 'which_host_source', c.which_host_source,
			'which_link_source', c.which_link_source, 'utm_campaign', c.utm_campaign, 'utm_source', c.utm_source,
			'utm_medium', c.utm_medium, 'utm_content', c.utm_content, 'utm_term', c.utm_term)
		|| coalesce(additional, '{}'),
		'emails', coalesce(('[' || emails || ']')::json, '[]'),
		'phones', coalesce(('[' || phones || ']')::json, '[]'),
		'requisites', coalesce(requisites, '[]'),
		'contacts', coalesce(contacts, '[]'))::text;
END
$fn$;
