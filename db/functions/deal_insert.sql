-- POST /deal/insert (impl/deals.go, DealInsert): a deal with its goods
-- positions and their journal rows in one call (its own transaction, or a
-- savepoint's part of the Idempotency-Key's).
--
-- Every statement reads or writes one table with the account as its first
-- condition or value (docs/scale-out.md, "Functions of fast-path
-- statements"); the positions are inserted one by one, by INSERT ... VALUES.
-- It refuses, writing nothing, with o_error:
--   'inactive'    when the responsible user is deactivated
--                 (impl/users_active.go, refuseInactiveUser);
--   'company'     when the counterparty is missing, deleted or not the
--                 caller's to see (impl/access.go, checkCompany);
--   'goods'       when the item o_index (from 0) names goods that are not an
--                 active item of the account's catalogue;
--   'discription' when the item o_index has neither goods nor a description.
-- An item with goods takes what it omits (name, code, price, quantity, VAT)
-- from the catalogue (impl/deals.go, dealInsertPositions); one without takes
-- quantity 1, price, discount and VAT 0. The items come as parallel arrays,
-- NULL where the request omits a field.
-- The signature before the budget (p_budget_ms), never released.
DROP FUNCTION IF EXISTS crm_deal_insert(bigint, bigint, text, bigint, text, bigint, text, bigint, bigint, bigint, bigint, bigint, date, date, numeric, text, text[], bigint[], text[], text[], numeric[], numeric[], numeric[], numeric[], text[]);

CREATE OR REPLACE FUNCTION crm_deal_insert(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_token bigint, p_name text, p_company bigint, p_contact bigint, p_type bigint, p_status bigint,
	p_responsible bigint, p_date_start date, p_date_finish date, p_sum numeric, p_note text, p_tags text[],
	p_goods bigint[], p_descriptions text[], p_codes text[], p_qnts numeric[], p_prices numeric[],
	p_discounts numeric[], p_vats numeric[], p_notes text[], p_budget_ms integer)
RETURNS TABLE (o_error text, o_index integer, o_id bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	deadline timestamptz := crm_budget_start(p_budget_ms);
	responsible_active boolean;
	owner bigint;
	catalogue jsonb; -- goods id -> {name, code, qnt, price, vat} of the active items among p_goods
	item jsonb;
	d deals;
	g deal_goods;
	n int := coalesce(cardinality(p_goods), 0);
	entities text[];
	records bigint[];
	changes jsonb[];
	new_id bigint;
BEGIN
	SELECT u.active INTO responsible_active FROM users u WHERE u.account_id = p_account AND u.id = p_responsible;
	IF responsible_active = false THEN
		o_error := 'inactive';
		RETURN NEXT;
		RETURN;
	END IF;
	SELECT user_id INTO owner FROM companies WHERE account_id = p_account AND id = p_company AND deleted_at IS NULL;
	IF NOT FOUND OR NOT crm_sees_owner(p_account, p_user, p_role, p_dept, owner) THEN
		o_error := 'company';
		RETURN NEXT;
		RETURN;
	END IF;
	IF n > 0 THEN
		SELECT jsonb_object_agg(id, jsonb_build_object('name', name, 'code', code, 'qnt', qnt, 'price', price, 'vat', vat))
		  INTO catalogue
		  FROM goods WHERE account_id = p_account AND id = ANY (p_goods) AND goods.active;
		FOR i IN 1 .. n LOOP
			IF p_goods[i] IS NOT NULL AND NOT coalesce(catalogue ? p_goods[i]::text, false) THEN
				o_error := 'goods';
			ELSIF p_goods[i] IS NULL AND coalesce(p_descriptions[i], '') = '' THEN
				o_error := 'discription';
			END IF;
			IF o_error IS NOT NULL THEN
				o_index := i - 1;
				RETURN NEXT;
				RETURN;
			END IF;
		END LOOP;
	END IF;

	new_id := nextval('deals_id_seq');
	INSERT INTO deals (account_id, id, name, company_id, contact_id, type_id, status_id, user_id,
		date_start, date_finish, sum, note, tags, created_by)
	OVERRIDING SYSTEM VALUE
	VALUES (p_account, new_id, p_name, p_company, p_contact, p_type, p_status, p_responsible,
		p_date_start, p_date_finish, coalesce(p_sum, 0), p_note, p_tags, p_user)
	RETURNING * INTO d;
	entities := ARRAY['deal'];
	records := ARRAY[d.id];
	changes := ARRAY[jsonb_build_object('name', d.name, 'company_id', d.company_id, 'contact_id', d.contact_id,
		'type_id', d.type_id, 'status_id', d.status_id, 'user_id', d.user_id,
		'date_start', to_char(d.date_start, 'YYYY-MM-DD'), 'date_finish', to_char(d.date_finish, 'YYYY-MM-DD'),
		'sum', d.sum, 'note', d.note, 'tags', d.tags)];

	FOR i IN 1 .. n LOOP
		item := catalogue -> p_goods[i]::text; -- NULL without goods
		new_id := nextval('deal_goods_id_seq');
		INSERT INTO deal_goods (account_id, id, deal_id, goods_id, description, code, qnt, price, discount, vat, note)
		OVERRIDING SYSTEM VALUE
		VALUES (p_account, new_id, d.id, p_goods[i],
			coalesce(p_descriptions[i], item ->> 'name'), coalesce(p_codes[i], item ->> 'code', ''),
			coalesce(p_qnts[i], (item ->> 'qnt')::numeric, 1), coalesce(p_prices[i], (item ->> 'price')::numeric, 0),
			coalesce(p_discounts[i], 0), coalesce(p_vats[i], (item ->> 'vat')::numeric, 0), coalesce(p_notes[i], ''))
		RETURNING * INTO g;
		entities := entities || 'deal_goods'::text;
		records := records || g.id;
		changes := changes || jsonb_build_object('id', g.id, 'deal_id', g.deal_id, 'goods_id', g.goods_id,
			'discription', g.description, 'code', g.code, 'qnt', trim_scale(g.qnt), 'price', g.price,
			'discount', trim_scale(g.discount), 'vat', trim_scale(g.vat), 'sum', g.sum, 'note', g.note);
	END LOOP;

	PERFORM crm_journal_append(p_account, p_user, p_token, array_fill(20::smallint, ARRAY[cardinality(entities)]),
		entities, records, array_fill('insert'::text, ARRAY[cardinality(entities)]), changes) WHERE pg_backend_pid() IS NOT NULL;
	PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	o_id := d.id;
	RETURN NEXT;
END
$fn$;
