-- GET /dashboard/my/tasks (impl/dashboards.go, DashboardMyTasks): the
-- MyTasks object of the caller for the day p_date (today in the caller's time
-- zone p_tz when it is missing, returned as date_from), listing at most
-- p_limit overdue tasks, as one JSON text (value): the same object as the
-- joined statement of myTasksSQL builds.
--
-- Every statement that reads a table reads one, with the account as its first
-- condition (docs/scale-out.md, "Functions of fast-path statements"): the ids
-- of the day's tasks in the list's order with their counts, the number of the
-- overdue ones with the ids of those shown, then the fields of the tasks
-- listed (a map by id), the names of their types, the users the caller sees
-- when a head (impl/access.go, visibleUsers) and the names of the
-- counterparties they may see (seesCounterparty; a deleted one too, as in the
-- joined statement). The object is then built from variables alone. Generic
-- plans, as in crm_kpi_items (kpi_items.sql).
CREATE OR REPLACE FUNCTION crm_dash_tasks(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_date date, p_limit integer, OUT date_from date, OUT value text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
	start_at timestamptz;
	end_at timestamptz;
	today_ids bigint[];
	today_total bigint;
	today_done bigint;
	overdue_total bigint;
	shown_ids bigint[];
	listed jsonb;          -- task id -> DashboardTask without its names
	type_ids bigint[];
	company_ids bigint[];
	type_names jsonb;      -- directory value id -> name
	company_names jsonb;   -- counterparty id -> name, of those the caller sees
	visible bigint[];
BEGIN
	date_from := coalesce(p_date, (now() AT TIME ZONE p_tz)::date);
	start_at := date_from::timestamp AT TIME ZONE p_tz;
	end_at := (date_from + 1)::timestamp AT TIME ZONE p_tz;

	SELECT coalesce(array_agg(id ORDER BY coalesce(date_finish, date_start), id), '{}'), count(*), count(*) FILTER (WHERE status_id = 2)
	  INTO today_ids, today_total, today_done
	  FROM tasks
	 WHERE account_id = p_account AND coalesce(date_finish, date_start) >= start_at AND coalesce(date_finish, date_start) < end_at
	   AND (user_id = p_user OR assigner_id = p_user);
	SELECT count(*), coalesce((array_agg(id ORDER BY coalesce(date_finish, date_start) DESC, id DESC))[1:p_limit], '{}')
	  INTO overdue_total, shown_ids
	  FROM tasks
	 WHERE account_id = p_account AND status_id = 1 AND (user_id = p_user OR assigner_id = p_user)
	   AND coalesce(date_finish, date_start) < start_at;

	IF cardinality(today_ids) + cardinality(shown_ids) > 0 THEN
		SELECT jsonb_object_agg(id, jsonb_build_object('id', id,
		           'status', CASE WHEN status_id = 2 THEN 'done' ELSE 'in work' END, 'done', status_id = 2,
		           'date_start', to_char(date_start AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
		           'date_finish', to_char(date_finish AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI:SS'),
		           'company_id', company_id, 'deal_id', deal_id, 'note', note, 'result', result, 'type_id', type_id)),
		       array_agg(DISTINCT type_id), array_agg(DISTINCT company_id)
		  INTO listed, type_ids, company_ids
		  FROM tasks
		 WHERE account_id = p_account AND id = ANY (today_ids || shown_ids);
		SELECT jsonb_object_agg(id, name) INTO type_names
		  FROM directory_values WHERE account_id = p_account AND id = ANY (type_ids);
		IF p_role = 'head' AND p_dept IS NOT NULL THEN
			SELECT array_agg(id) INTO visible FROM users WHERE account_id = p_account AND (id = p_user OR department_id = p_dept);
		ELSE
			visible := ARRAY[p_user];
		END IF;
		SELECT jsonb_object_agg(id, name) INTO company_names
		  FROM companies
		 WHERE account_id = p_account AND id = ANY (company_ids) AND (p_role = 'admin' OR user_id = ANY (visible));
	END IF;

	-- Each list in its order, its tasks with the names they show.
	WITH listed_ids AS (
		SELECT 'today' AS list, x.id, x.n FROM unnest(today_ids) WITH ORDINALITY AS x (id, n)
		UNION ALL
		SELECT 'overdue', x.id, x.n FROM unnest(shown_ids) WITH ORDINALITY AS x (id, n)
	), lists AS (
		SELECT l.list, jsonb_agg(((listed -> l.id::text) - 'type_id') || jsonb_build_object(
		           'type', coalesce(type_names ->> (listed -> l.id::text ->> 'type_id'), ''),
		           'company_name', coalesce(company_names ->> (listed -> l.id::text ->> 'company_id'), ''))
		           ORDER BY l.n) AS tasks
		  FROM listed_ids l
		 GROUP BY l.list
	)
	SELECT jsonb_build_object(
	           'date', date_from,
	           'today', jsonb_build_object('total', today_total, 'done', today_done,
	               'tasks', coalesce((SELECT tasks FROM lists WHERE list = 'today'), '[]')),
	           'overdue', jsonb_build_object('total', overdue_total, 'shown', cardinality(shown_ids),
	               'tasks', coalesce((SELECT tasks FROM lists WHERE list = 'overdue'), '[]')))::text
	  INTO value;
END
$fn$;
