-- GET /dashboard/my/day (impl/dashboards.go, DashboardMyDay): the MyDay
-- object of the caller (p_name is their name) for the days p_from .. p_to, as
-- one JSON text (value), the same object as the joined statement of daySQL
-- builds. A missing p_from is today in the caller's time zone p_tz, a missing
-- p_to the day p_from: the days taken are returned (date_from, date_to), and
-- value is NULL when they end before they start or are more than p_max_days,
-- which the server then refuses (checkPeriod). my_kpi is crm_kpi_my's object
-- for the same days (kpi_my.sql, with p_rollup and p_metrics).
--
-- Every statement that reads a table reads one, with the account as its first
-- condition (docs/scale-out.md, "Functions of fast-path statements"). On a
-- Citus worker each statement with parameters besides the account is planned
-- again at every execution, for the values given, at a cost that grows with
-- an array's length: 500 ids cost 0.3 ms a statement there. So the statements take no long arrays and index ranges
-- whose plans are cheap to make, and what combines their results (the
-- forgotten counterparties) is done by the last statement, which reads no
-- table. They read: the users a head sees (impl/access.go, visibleUsers; an
-- admin sees every user, and every record has a user of the account, so an
-- admin's records are not filtered); the directory values the dashboard names
-- (invoice types, controlled counterparty types, kinds of tasks); the
-- counterparties added in the period; the ids of the live counterparties of
-- the controlled types; the tasks scheduled in the period (by deadline) and
-- those done in it, by kind, a statement each; the unfinished tasks due before
-- the period (overdue) and after it in one, the latter giving the distinct
-- counterparties that have one, which are not forgotten; the deals, the
-- invoices, the money. Generic plans on plain PostgreSQL, as in crm_kpi_items
-- (kpi_items.sql).
CREATE OR REPLACE FUNCTION crm_dash_day(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_name text, p_from date, p_to date, p_max_days integer, p_rollup boolean, p_metrics text[],
	OUT date_from date, OUT date_to date, OUT value text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
	admin boolean := p_role = 'admin';
	visible bigint[];      -- the users whose records the caller sees; not read for an admin
	start_at timestamptz;
	end_at timestamptz;
	invoice_types bigint[];
	controlled_types bigint[];
	kind_ids bigint[];     -- the kinds of tasks (directory 35), their names and order
	kind_names text[];
	kind_sorts integer[];
	companies_added jsonb;
	controlled bigint[];      -- the live counterparties of the controlled types the caller sees
	controlled_mine bigint[]; -- those of them that are the caller's
	-- The tasks scheduled in the period (by deadline) and done in it, by kind:
	-- the kinds, the tasks and those of the caller (assignee or assigner).
	scheduled_kinds bigint[];
	scheduled_n bigint[];
	scheduled_mine bigint[];
	done_kinds bigint[];
	done_n bigint[];
	done_mine bigint[];
	overdue_total bigint;
	overdue_mine bigint;
	planned bigint[];         -- counterparties with an unfinished task due from end_at on
	deals_created jsonb;
	invoices_issued jsonb;
	money jsonb;
	my_kpi jsonb;
BEGIN
	date_from := coalesce(p_from, (now() AT TIME ZONE p_tz)::date);
	date_to := coalesce(p_to, date_from);
	IF date_from > date_to OR date_to - date_from + 1 > p_max_days THEN
		RETURN;
	END IF;
	start_at := date_from::timestamp AT TIME ZONE p_tz;
	end_at := (date_to + 1)::timestamp AT TIME ZONE p_tz;

	IF p_role = 'head' AND p_dept IS NOT NULL THEN
		SELECT array_agg(id) INTO visible FROM users WHERE account_id = p_account AND (id = p_user OR department_id = p_dept);
	ELSIF NOT admin THEN
		visible := ARRAY[p_user];
	END IF;
	SELECT coalesce(array_agg(id) FILTER (WHERE directory_code = 44 AND is_invoice), '{}'),
	       coalesce(array_agg(id) FILTER (WHERE directory_code = 9 AND is_controlled), '{}'),
	       array_agg(id) FILTER (WHERE directory_code = 35), array_agg(name) FILTER (WHERE directory_code = 35),
	       array_agg(sort) FILTER (WHERE directory_code = 35)
	  INTO invoice_types, controlled_types, kind_ids, kind_names, kind_sorts
	  FROM directory_values WHERE account_id = p_account AND directory_code IN (9, 35, 44);

	SELECT jsonb_build_object('total', count(*), 'mine', count(*) FILTER (WHERE user_id = p_user))
	  INTO companies_added
	  FROM companies
	 WHERE account_id = p_account AND (admin OR user_id = ANY (visible)) AND deleted_at IS NULL
	   AND created_at >= start_at AND created_at < end_at;
	SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(id) FILTER (WHERE user_id = p_user), '{}')
	  INTO controlled, controlled_mine
	  FROM companies
	 WHERE account_id = p_account AND deleted_at IS NULL AND type_id = ANY (controlled_types) AND (admin OR user_id = ANY (visible));

	-- A window over the groups gathers them into each row, of which INTO
	-- takes the first (kpi_items.sql).
	SELECT array_agg(type_id) OVER (), array_agg(count(*)) OVER (),
	       array_agg(count(*) FILTER (WHERE user_id = p_user OR assigner_id = p_user)) OVER ()
	  INTO scheduled_kinds, scheduled_n, scheduled_mine
	  FROM tasks
	 WHERE account_id = p_account AND coalesce(date_finish, date_start) >= start_at AND coalesce(date_finish, date_start) < end_at
	   AND (admin OR user_id = ANY (visible) OR assigner_id = ANY (visible))
	 GROUP BY type_id;
	SELECT array_agg(type_id) OVER (), array_agg(count(*)) OVER (),
	       array_agg(count(*) FILTER (WHERE user_id = p_user OR assigner_id = p_user)) OVER ()
	  INTO done_kinds, done_n, done_mine
	  FROM tasks
	 WHERE account_id = p_account AND done_at >= start_at AND done_at < end_at
	   AND (admin OR user_id = ANY (visible) OR assigner_id = ANY (visible))
	 GROUP BY type_id;
	-- The unfinished tasks outside the period: those due before it that the
	-- caller sees are overdue; any due after it keeps its counterparty from
	-- being forgotten.
	SELECT count(*) FILTER (WHERE coalesce(date_finish, date_start) < start_at
	                          AND (admin OR user_id = ANY (visible) OR assigner_id = ANY (visible))),
	       count(*) FILTER (WHERE coalesce(date_finish, date_start) < start_at AND (user_id = p_user OR assigner_id = p_user)),
	       coalesce(array_agg(DISTINCT company_id) FILTER (WHERE coalesce(date_finish, date_start) >= end_at AND company_id IS NOT NULL), '{}')
	  INTO overdue_total, overdue_mine, planned
	  FROM tasks
	 WHERE account_id = p_account AND status_id = 1
	   AND (coalesce(date_finish, date_start) < start_at OR coalesce(date_finish, date_start) >= end_at);

	SELECT jsonb_build_object('total', count(*), 'total_sum', coalesce(sum(sum), 0),
	           'mine', count(*) FILTER (WHERE user_id = p_user), 'mine_sum', coalesce(sum(sum) FILTER (WHERE user_id = p_user), 0))
	  INTO deals_created
	  FROM deals
	 WHERE account_id = p_account AND (admin OR user_id = ANY (visible)) AND created_at >= start_at AND created_at < end_at;
	SELECT jsonb_build_object('total', count(*), 'total_sum', coalesce(sum(sum), 0),
	           'mine', count(*) FILTER (WHERE user_id = p_user), 'mine_sum', coalesce(sum(sum) FILTER (WHERE user_id = p_user), 0))
	  INTO invoices_issued
	  FROM documents
	 WHERE account_id = p_account AND (admin OR user_id = ANY (visible)) AND date BETWEEN date_from AND date_to
	   AND type_id = ANY (invoice_types);
	SELECT jsonb_build_object(
	           'income', coalesce(sum(sum) FILTER (WHERE direction = 1), 0),
	           'income_count', count(*) FILTER (WHERE direction = 1),
	           'mine_income', coalesce(sum(sum) FILTER (WHERE direction = 1 AND user_id = p_user), 0),
	           'expense', coalesce(sum(sum) FILTER (WHERE direction = 2), 0),
	           'expense_count', count(*) FILTER (WHERE direction = 2))
	  INTO money
	  FROM money_movements
	 WHERE account_id = p_account AND (admin OR user_id = ANY (visible)) AND NOT is_transfer AND date BETWEEN date_from AND date_to;

	SELECT crm_kpi_my_object(p_account, p_user, p_tz, date_from, date_to, p_rollup, p_metrics) INTO my_kpi
	 WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)

	WITH counted AS (
		SELECT c.type_id, c.n AS total, 0 AS done, c.mine, 0 AS mine_done
		  FROM unnest(scheduled_kinds, scheduled_n, scheduled_mine) AS c (type_id, n, mine)
		UNION ALL
		SELECT c.type_id, 0, c.n, 0, c.mine
		  FROM unnest(done_kinds, done_n, done_mine) AS c (type_id, n, mine)
	), by_kind AS (
		SELECT c.type_id, sum(c.total) AS total, sum(c.done) AS done, sum(c.mine) AS mine, sum(c.mine_done) AS mine_done
		  FROM counted c
		 GROUP BY c.type_id
	), task_counts AS (
		SELECT jsonb_build_object(
		           'scheduled_total', coalesce(sum(b.total), 0), 'done_total', coalesce(sum(b.done), 0),
		           'mine_scheduled', coalesce(sum(b.mine), 0), 'mine_done', coalesce(sum(b.mine_done), 0),
		           'overdue_total', overdue_total, 'mine_overdue', overdue_mine,
		           'by_type', coalesce(jsonb_agg(jsonb_build_object('type', coalesce(k.name, ''), 'total', b.total,
		               'done', b.done, 'mine', b.mine, 'mine_done', b.mine_done) ORDER BY k.sort, k.name, b.type_id), '[]')) AS o
		  FROM by_kind b
		  LEFT JOIN unnest(kind_ids, kind_names, kind_sorts) AS k (id, name, sort) ON k.id = b.type_id
	), forgotten AS (
		-- The controlled counterparties without an unfinished task due later.
		SELECT count(*) AS total, count(*) FILTER (WHERE m.id IS NOT NULL) AS mine
		  FROM unnest(controlled) AS c (id)
		  LEFT JOIN unnest(planned) AS p (id) ON p.id = c.id
		  LEFT JOIN unnest(controlled_mine) AS m (id) ON m.id = c.id
		 WHERE p.id IS NULL
	)
	SELECT jsonb_build_object(
	           'period', jsonb_build_object('date_from', date_from, 'date_to', date_to),
	           'user', jsonb_build_object('id', p_user, 'name', p_name),
	           'companies_added', companies_added,
	           'tasks', (SELECT o FROM task_counts),
	           'deals_created', deals_created,
	           'invoices_issued', invoices_issued,
	           'money', money,
	           'forgotten_companies', (SELECT jsonb_build_object('total', f.total, 'mine', f.mine) FROM forgotten f),
	           'my_kpi', my_kpi)::text
	  INTO value;
END
$fn$;
