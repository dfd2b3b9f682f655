-- GET /dashboard/kpi/my (impl/dashboards.go, DashboardKpiMy): the KpiMy
-- object of the caller for the days p_from .. p_to, as one JSON text (value),
-- the same object as the joined statement of kpiMyJSON builds.
--
-- A missing p_to is today in the caller's time zone p_tz, a missing p_from
-- the first of p_to's month: the days taken are returned (date_from,
-- date_to), and value is NULL when they end before they start or are more than
-- p_max_days, which the server then refuses (checkPeriod). The month to date
-- runs from the first of date_to's month. The items come from crm_kpi_items
-- (kpi_items.sql), with p_rollup when kpi_daily serves the caller
-- (kpiRollup); p_metrics is the order of the items (kpiMetrics).
--
-- Every statement that reads a table is one of crm_kpi_items, of one table
-- with the account as its first condition (docs/scale-out.md, "Functions of
-- fast-path statements"); the object is built from its rows alone. Generic
-- plans, as in crm_kpi_items.
CREATE OR REPLACE FUNCTION crm_kpi_my(p_account bigint, p_user bigint, p_role text, p_dept bigint, p_tz text,
	p_from date, p_to date, p_max_days integer, p_rollup boolean, p_metrics text[],
	OUT date_from date, OUT date_to date, OUT value text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
	date_to := coalesce(p_to, (now() AT TIME ZONE p_tz)::date);
	date_from := coalesce(p_from, date_trunc('month', date_to::timestamp)::date);
	IF date_from > date_to OR date_to - date_from + 1 > p_max_days THEN
		RETURN;
	END IF;
	SELECT crm_kpi_my_object(p_account, p_user, p_tz, date_from, date_to, p_rollup, p_metrics)::text INTO value
	 WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
END
$fn$;

-- crm_kpi_my_object, for crm_kpi_my and crm_dash_day (dash_day.sql): the
-- KpiMy object of the user usr for the days date_from .. date_to, checked by
-- its caller. Its first argument is not p_account, so Citus does not
-- distribute it: it runs where its caller runs.
CREATE OR REPLACE FUNCTION crm_kpi_my_object(acc bigint, usr bigint, tz text, date_from date, date_to date,
	rollup boolean, metrics text[])
RETURNS jsonb LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
	mtd date := date_trunc('month', date_to::timestamp)::date;
	value jsonb;
BEGIN
	SELECT CASE WHEN count(*) = 0 THEN jsonb_build_object('has_kpi', false)
	       ELSE jsonb_build_object(
	           'has_kpi', true,
	           'period', jsonb_build_object('date_from', date_from, 'date_to', date_to),
	           'period_progress_percent', round(avg(i.progress), 2),
	           'month_to_date_progress_percent', round(avg(i.mtd_progress), 2),
	           'month_to_date', jsonb_build_object('date_from', mtd, 'date_to', date_to),
	           'month_items', jsonb_agg(jsonb_build_object('name', i.name, 'measure', i.measure, 'plan', round(i.plan, 2),
	               'actual', i.actual, 'progress_percent', round(i.progress, 2)) ORDER BY array_position(metrics, i.metric)))
	       END
	  INTO value
	  FROM crm_kpi_items(acc, ARRAY[usr], tz, date_from, date_to, mtd, rollup)
	       AS i (user_id, metric, name, measure, plan, actual, progress, mtd_plan, mtd_actual, mtd_progress)
	 WHERE pg_backend_pid() IS NOT NULL; -- kept plan (budget.sql)
	RETURN value;
END
$fn$;
