-- GET /dashboard/kpi/team (impl/dashboards.go, DashboardKpiTeam): the KpiTeam
-- object for the days p_from .. p_to, as one JSON text (value), the same
-- object as the joined statement of kpiTeamSQL builds. The days are filled
-- and checked as by crm_kpi_my (kpi_my.sql): date_from and date_to are the
-- days taken, value NULL when the server refuses them.
--
-- The staff (kpiTeamScope) are the active users of the account for an admin,
-- of the caller's department p_dept for anyone else with one, the caller alone
-- without; with p_department, that department's, which must be the caller's
-- own or, for an admin, one of the account: otherwise error is 'department'
-- (answered as a missing department) and value NULL. Their items come from
-- crm_kpi_items (kpi_items.sql); a user's progress is the average of their
-- items', a department's the average of its users'. p_users_access and
-- p_departments_access are the texts of the lists' access: a list is given
-- only when its text is 'ok'.
--
-- Every statement that reads a table reads one, with the account as its first
-- condition (docs/scale-out.md, "Functions of fast-path statements"): the
-- department asked for, the staff, their departments' names (into a map), and
-- those of crm_kpi_items; the object is built from variables alone. Generic
-- plans, as in crm_kpi_items.
CREATE OR REPLACE FUNCTION crm_kpi_team(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_from date, p_to date, p_max_days integer, p_rollup boolean, p_department bigint,
	p_users_access text, p_departments_access text,
	OUT date_from date, OUT date_to date, OUT error text, OUT value text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
	scope_department bigint; -- NULL: any department
	scope_user bigint;       -- NULL: any user
	staff bigint[];
	staff_names text[];
	staff_departments bigint[];
	department_names jsonb;  -- department id -> name
BEGIN
	date_to := coalesce(p_to, (now() AT TIME ZONE p_tz)::date);
	date_from := coalesce(p_from, date_trunc('month', date_to::timestamp)::date);
	IF date_from > date_to OR date_to - date_from + 1 > p_max_days THEN
		RETURN;
	END IF;

	IF p_department IS NOT NULL THEN
		IF p_role <> 'admin' THEN
			IF p_dept IS DISTINCT FROM p_department THEN
				error := 'department';
				RETURN;
			END IF;
		ELSE
			PERFORM FROM departments WHERE account_id = p_account AND id = p_department;
			IF NOT FOUND THEN
				error := 'department';
				RETURN;
			END IF;
		END IF;
		scope_department := p_department;
	ELSIF p_role = 'admin' THEN
		NULL; -- every active user
	ELSIF p_dept IS NOT NULL THEN
		scope_department := p_dept;
	ELSE
		scope_user := p_user;
	END IF;
	SELECT array_agg(id ORDER BY id), array_agg(name ORDER BY id), array_agg(department_id ORDER BY id)
	  INTO staff, staff_names, staff_departments
	  FROM users
	 WHERE account_id = p_account AND active
	   AND (scope_department IS NULL OR department_id = scope_department) AND (scope_user IS NULL OR id = scope_user);
	IF cardinality(array_remove(staff_departments, NULL)) > 0 THEN
		SELECT jsonb_object_agg(id, name) INTO department_names
		  FROM departments WHERE account_id = p_account AND id = ANY (staff_departments);
	END IF;

	WITH items AS (
		SELECT i.user_id, i.progress
		  FROM crm_kpi_items(p_account, coalesce(staff, '{}'), p_tz, date_from, date_to, date_from, p_rollup)
		       AS i (user_id, metric, name, measure, plan, actual, progress, mtd_plan, mtd_actual, mtd_progress)
	), users_progress AS (
		SELECT i.user_id, s.name, s.department_id, coalesce(department_names ->> s.department_id::text, '') AS department,
		       avg(i.progress) AS progress
		  FROM items i
		  JOIN unnest(staff, staff_names, staff_departments) AS s (id, name, department_id) ON s.id = i.user_id
		 GROUP BY i.user_id, s.name, s.department_id
	), departments_progress AS (
		SELECT u.department_id, u.department AS name, avg(u.progress) AS progress
		  FROM users_progress u
		 WHERE u.department_id IS NOT NULL
		 GROUP BY u.department_id, u.department
	)
	SELECT jsonb_build_object(
		'period', jsonb_build_object('date_from', date_from, 'date_to', date_to),
		'users', CASE WHEN p_users_access = 'ok' THEN
			coalesce((SELECT jsonb_agg(jsonb_build_object('user_id', u.user_id, 'name', u.name, 'department_id', u.department_id,
				'department', u.department, 'progress_percent', round(u.progress, 2)) ORDER BY round(u.progress, 2) DESC, u.name, u.user_id)
				FROM users_progress u), '[]') END,
		'users_access', p_users_access,
		'departments', CASE WHEN p_departments_access = 'ok' THEN
			coalesce((SELECT jsonb_agg(jsonb_build_object('department_id', d.department_id, 'name', d.name,
				'progress_percent', round(d.progress, 2)) ORDER BY round(d.progress, 2) DESC, d.name, d.department_id)
				FROM departments_progress d), '[]') END,
		'departments_access', p_departments_access)::text
	  INTO value;
END
$fn$;
