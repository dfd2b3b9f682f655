-- crm_list and crm_list_statement are no longer called: the server sends the
-- universal list's single-table statements itself, as prepared statements of
-- the account's node (impl/list_fast.go, runFastList), which on Citus cost a
-- third of this function's work (docs/decisions.md, "Scale-out that pays on
-- Citus"). They stay defined for one release, so that servers of the previous
-- release still running during an upgrade keep them; the next release drops
-- them.
--
-- POST /common/list/paging/{module} (impl/list.go, CommonListPaging, and
-- impl/list_fast.go): a page of the universal list and its total, for the
-- modules whose names come from small lookups (counterparties, tasks, deals,
-- documents, money movements, goods).
--
-- A request of the list picks its columns, filters and sort; the server turns
-- them into up to four statements of one table each (impl/list_fast.go), and
-- this function runs them in one round trip:
--
--   p_prefilter  the ids of the only records the page may hold, read from
--                another table (the e-mails, phones or names of counterparties),
--                as one bigint[]; '' when no filter needs one;
--   p_rows       the page's records in the order of the page: their id and the
--                ids of the names their columns show (users, directory values,
--                counterparties, deals, money accounts), as arrays;
--   p_value      the JSON array of the page, from the page's ids and the maps of
--                names built here;
--   p_total      the number of matching records.
--
-- The statements differ by request, so they cannot be written here; but they
-- are few per shape of request, and planning each at every request would cost
-- more than running it. So each is prepared in the session under a name of its
-- own text (crm_ and its MD5) the first time the session meets it, and then
-- executed by that name: PostgreSQL keeps its plan, and on Citus it is a
-- fast-path statement whose plan Citus keeps too. The names this session has
-- prepared are kept in the setting crm.list_prepared, and past 200 of them the
-- function deallocates them all and starts again.
--
-- Every statement has the same parameters: the function's own values first,
-- $1 the account, $2 the users whose records the caller sees (NULL: all),
-- $3 the page's ids, $4 .. $7 the maps of names (id -> name) of users,
-- directory values, counterparties (those the caller may open) and deals, $8
-- the map of money accounts (id -> name and currency), $9 the prefilter's ids,
-- $10 the map of counterparties' other fields (id -> tax_id, country, region,
-- city, url, type_id, status_id, category_id); then the request's own values
-- ($11 on), given as text in p_args and typed by p_types.
--
-- p_maps names the maps the columns need ('users', 'dirs', 'companies',
-- 'company_rows', 'company_dirs' for the directory values of the
-- counterparties, 'deals', 'money_accounts'); p_sort_maps those built whole for
-- the account before the page is read, for a sort by a name or for one pass
-- (users and directory values only: the server reads every other such list the
-- general way).
--
-- With p_one_pass the names all come from maps of small tables built whole for
-- the account before the page (p_sort_maps: users, directory values), and p_rows
-- is the page itself: a row's JSON object (j) per record, in the page's order.
--
-- With p_count_module the total is the maintained count of the module's records
-- in list_counts (kind p_count_kind, any when NULL) of the owners the caller
-- sees, read by a statement of this function; otherwise p_total counts them.
--
-- With p_by_prefilter the page is the prefilter's ids themselves, sorted by id
-- (p_desc) and cut to the page (p_limit, p_offset), and the total is their
-- number: the list of a name, e-mail or phone alone in the default order.
DROP FUNCTION IF EXISTS crm_list(bigint, bigint, text, bigint, text, text, text, text, text, text, text[], text[], text[], boolean, boolean, bigint, bigint);

CREATE OR REPLACE FUNCTION crm_list(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_prefilter text, p_rows text, p_value text, p_total text, p_types text, p_args text[],
	p_maps text[], p_sort_maps text[], p_by_prefilter boolean, p_desc boolean, p_limit bigint, p_offset bigint,
	p_one_pass boolean, p_count_module smallint, p_count_kind smallint)
RETURNS TABLE (total bigint, value text) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	visible bigint[];             -- NULL: every user's records
	prefiltered bigint[];
	page bigint[] := '{}';
	user_ids bigint[] := '{}';
	dir_ids bigint[] := '{}';
	company_ids bigint[] := '{}';
	deal_ids bigint[] := '{}';
	money_account_ids bigint[] := '{}';
	users jsonb;
	dirs jsonb;
	companies jsonb;
	deals jsonb;
	money_accounts jsonb;
	company_rows jsonb;
	objects text[] := '{}';
	r record;
	n bigint;
	v text;
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

	IF p_prefilter <> '' THEN
		FOR r IN EXECUTE crm_list_statement(p_prefilter, p_types, p_account, visible, page, users, dirs, companies, deals, money_accounts, prefiltered, company_rows, p_args) LOOP
			prefiltered := r.ids;
		END LOOP;
		prefiltered := coalesce(prefiltered, '{}');
		IF cardinality(prefiltered) = 0 THEN
			RETURN QUERY SELECT 0::bigint, '[]'::text;
			RETURN;
		END IF;
	END IF;
	IF p_by_prefilter THEN
		-- No table is read here: the ids are sorted and cut in memory.
		IF p_desc THEN
			page := ARRAY(SELECT x FROM unnest(prefiltered) x ORDER BY x DESC LIMIT p_limit OFFSET p_offset);
		ELSE
			page := ARRAY(SELECT x FROM unnest(prefiltered) x ORDER BY x LIMIT p_limit OFFSET p_offset);
		END IF;
	END IF;

	IF 'users' = ANY (p_sort_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO users FROM users WHERE account_id = p_account;
	END IF;
	IF 'dirs' = ANY (p_sort_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO dirs FROM directory_values WHERE account_id = p_account;
	END IF;

	IF p_one_pass THEN
		FOR r IN EXECUTE crm_list_statement(p_rows, p_types, p_account, visible, page, users, dirs, companies, deals, money_accounts, prefiltered, company_rows, p_args) LOOP
			objects := objects || r.j;
		END LOOP;
		v := '[' || array_to_string(objects, ',') || ']';
	ELSE
	FOR r IN EXECUTE crm_list_statement(p_rows, p_types, p_account, visible, page, users, dirs, companies, deals, money_accounts, prefiltered, company_rows, p_args) LOOP
		IF NOT p_by_prefilter THEN
			page := page || r.id;
		END IF;
		user_ids := user_ids || r.users;
		dir_ids := dir_ids || r.dirs;
		company_ids := company_ids || r.companies;
		deal_ids := deal_ids || r.deals;
		money_account_ids := money_account_ids || r.money_accounts;
	END LOOP;

	IF 'users' = ANY (p_maps) AND NOT 'users' = ANY (p_sort_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO users
		  FROM users WHERE account_id = p_account AND id = ANY (user_ids);
	END IF;
	IF 'company_rows' = ANY (p_maps) THEN
		-- impl/access.go, seesCounterparty: a record shows its counterparty
		-- only to who may open it.
		SELECT jsonb_object_agg(id, name),
		       jsonb_object_agg(id, jsonb_build_object('tax_id', tax_id, 'country', country, 'region', region,
		           'city', city, 'url', url, 'type_id', type_id, 'status_id', status_id, 'category_id', category_id)),
		       array_agg(type_id) || array_agg(status_id) || array_agg(category_id)
		  INTO companies, company_rows, company_ids
		  FROM companies WHERE account_id = p_account AND id = ANY (company_ids) AND (visible IS NULL OR user_id = ANY (visible));
		IF 'company_dirs' = ANY (p_maps) THEN
			dir_ids := dir_ids || coalesce(company_ids, '{}');
		END IF;
	ELSIF 'companies' = ANY (p_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO companies
		  FROM companies WHERE account_id = p_account AND id = ANY (company_ids) AND (visible IS NULL OR user_id = ANY (visible));
	END IF;
	IF ('dirs' = ANY (p_maps) OR 'company_dirs' = ANY (p_maps)) AND NOT 'dirs' = ANY (p_sort_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO dirs
		  FROM directory_values WHERE account_id = p_account AND id = ANY (dir_ids);
	END IF;
	IF 'deals' = ANY (p_maps) THEN
		SELECT jsonb_object_agg(id, name) INTO deals
		  FROM deals WHERE account_id = p_account AND id = ANY (deal_ids);
	END IF;
	IF 'money_accounts' = ANY (p_maps) THEN
		SELECT jsonb_object_agg(id, jsonb_build_object('name', name, 'currency', currency)) INTO money_accounts
		  FROM money_accounts WHERE account_id = p_account AND id = ANY (money_account_ids);
	END IF;

	IF cardinality(page) = 0 THEN
		v := '[]';
	ELSE
		EXECUTE crm_list_statement(p_value, p_types, p_account, visible, page, users, dirs, companies, deals, money_accounts, prefiltered, company_rows, p_args)
		   INTO v;
	END IF;
	END IF;
	IF p_by_prefilter THEN
		n := cardinality(prefiltered);
	ELSIF p_count_module IS NOT NULL THEN
		SELECT coalesce(sum(l.n), 0) INTO n FROM list_counts l
		 WHERE account_id = p_account AND module = p_count_module AND (p_count_kind IS NULL OR kind = p_count_kind)
		   AND (visible IS NULL OR owner_id = ANY (visible));
	ELSE
		EXECUTE crm_list_statement(p_total, p_types, p_account, visible, page, users, dirs, companies, deals, money_accounts, prefiltered, company_rows, p_args)
		   INTO n;
	END IF;
	RETURN QUERY SELECT n, coalesce(v, '[]');
END
$fn$;

-- crm_list_statement returns the command that executes statement with these
-- values, after preparing it in the session under its own name when this
-- session has not yet (see crm_list).
DROP FUNCTION IF EXISTS crm_list_statement(text, text, bigint, bigint[], bigint[], jsonb, jsonb, jsonb, jsonb, jsonb, bigint[], text[]);

CREATE OR REPLACE FUNCTION crm_list_statement(statement text, types text,
	account bigint, visible bigint[], page bigint[], users jsonb, dirs jsonb, companies jsonb, deals jsonb,
	money_accounts jsonb, prefiltered bigint[], company_rows jsonb, args text[])
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	name text := 'crm_' || md5(types || ':' || statement);
	prepared text := coalesce(current_setting('crm.list_prepared', true), '');
BEGIN
	IF position(name IN prepared) = 0 THEN
		IF length(prepared) > 200 * 37 THEN
			DECLARE
				old text;
			BEGIN
				FOREACH old IN ARRAY string_to_array(trim(BOTH ',' FROM prepared), ',') LOOP
					EXECUTE format('DEALLOCATE %I', old);
				END LOOP;
			END;
			prepared := '';
		END IF;
		EXECUTE format('PREPARE %I (bigint, bigint[], bigint[], jsonb, jsonb, jsonb, jsonb, jsonb, bigint[], jsonb%s) AS %s',
		               name, types, statement);
		PERFORM set_config('crm.list_prepared', prepared || name || ',', false);
	END IF;
	RETURN format('EXECUTE %I(%s)', name, array_to_string(
		ARRAY[quote_nullable(account), quote_nullable(visible), quote_nullable(page), quote_nullable(users),
		      quote_nullable(dirs), quote_nullable(companies), quote_nullable(deals), quote_nullable(money_accounts),
		      quote_nullable(prefiltered), quote_nullable(company_rows)]
		|| ARRAY(SELECT quote_nullable(a) FROM unnest(args) a), ','));
END
$fn$;
