-- crm_kpi_items, for crm_kpi_my and crm_kpi_team (kpi_my.sql, kpi_team.sql):
-- the KPI items of the users staff (impl/dashboards.go, kpiItemsSQL), one row
-- per user and metric: the plan recalculated to the days period_from ..
-- period_to, the actual and the progress (percent, at most 100), and the same
-- for the days mtd_from .. period_to (NULL plan and progress when no month
-- of those days has a plan item of the metric).
--
-- Each month a period touches counts with the days the period has in it: the
-- month's plan item with plan_value × those days / the days of the month,
-- and the records of those days; a month without a plan item of the metric
-- counts for neither. The days are those of the time zone tz. With rollup
-- (impl/dashboards.go, kpiRollup: tz is the account's) the actual is read
-- from kpi_daily, otherwise counted from the records; both give the same
-- numbers.
--
-- Every statement that reads a table reads one, with the account as its first
-- condition (docs/scale-out.md, "Functions of fast-path statements"): the
-- plans, then their items, then per source of the actual (counterparties,
-- tasks, deals, invoices, income; or kpi_daily) one grouped statement of the
-- users with plans, whose rows (one per user, source and month) are gathered
-- in an array; only the sources of the metrics planned are read. The items
-- are then computed from the arrays alone, by the expressions of the joined
-- statement, so that every number is the same to the last decimal.
--
-- Its statements keep generic plans (plan_cache_mode, for the call only;
-- crm_kpi_my and crm_kpi_team set it too): with custom plans, which know the
-- arrays' lengths, PostgreSQL priced those over arrays below their generic
-- plans and planned them again at every call, which cost more than running
-- them (measured: twice the time of a call). Its first argument is not
-- p_account, so Citus does not distribute it: it runs where its caller runs.
CREATE OR REPLACE FUNCTION crm_kpi_items(acc bigint, staff bigint[], tz text, period_from date, period_to date,
	mtd_from date, rollup boolean)
RETURNS TABLE (o_user bigint, o_metric text, o_name text, o_measure text, o_plan numeric, o_actual numeric,
	o_progress numeric, o_mtd_plan numeric, o_mtd_actual numeric, o_mtd_progress numeric)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
	lo date := least(period_from, mtd_from); -- the records are read once for both periods
	start_at timestamptz := period_from::timestamp AT TIME ZONE tz;
	mtd_at timestamptz := mtd_from::timestamp AT TIME ZONE tz;
	lo_at timestamptz := lo::timestamp AT TIME ZONE tz;
	end_at timestamptz := (period_to + 1)::timestamp AT TIME ZONE tz;
	-- What each metric counts: the source of its records (kpi_daily.metric)
	-- and whether it is their sum (amount) or their number.
	metric_names text[] := ARRAY['companies_added', 'tasks_done', 'deals_created', 'deal_sum', 'invoices_issued', 'invoice_sum', 'income'];
	metric_sources smallint[] := '{1, 2, 3, 3, 4, 4, 5}';
	metric_amounts boolean[] := '{f, f, f, t, f, t, t}';
	-- The plans, one element each, and the users who have one.
	plan_ids bigint[];
	plan_users bigint[];
	plan_months date[];
	planned bigint[];
	-- Their items, one element each, and the sources their metrics count.
	item_plans bigint[];
	item_metrics text[];
	item_names text[];
	item_measures text[];
	item_values numeric[];
	sources smallint[];
	invoice_types bigint[] := '{}';
	-- The actual per user, source and month: [user id, source, month, the
	-- number and the sum of the records of the period, those of the month to
	-- date]; JSON keeps each number as its statement counted it.
	counted jsonb[] := '{}';
	found_rows jsonb[];
BEGIN
	SELECT array_agg(id), array_agg(user_id), array_agg(month), array_agg(DISTINCT user_id)
	  INTO plan_ids, plan_users, plan_months, planned
	  FROM kpi_plans
	 WHERE account_id = acc AND user_id = ANY (staff) AND month BETWEEN date_trunc('month', lo::timestamp)::date AND period_to;
	IF plan_ids IS NULL THEN
		RETURN;
	END IF;
	SELECT array_agg(plan_id), array_agg(metric), array_agg(name), array_agg(measure), array_agg(plan_value),
	       array_agg(DISTINCT metric_sources[array_position(metric_names, metric)])
	  INTO item_plans, item_metrics, item_names, item_measures, item_values, sources
	  FROM kpi_plan_items
	 WHERE account_id = acc AND plan_id = ANY (plan_ids);
	IF item_plans IS NULL THEN
		RETURN;
	END IF;
	IF 4 = ANY (sources) THEN
		-- The account's invoice types of now, also for the days of kpi_daily,
		-- which keeps the documents of every type.
		SELECT coalesce(array_agg(id), '{}') INTO invoice_types
		  FROM directory_values WHERE account_id = acc AND directory_code = 44 AND is_invoice;
	END IF;

	-- One grouped statement per source, or kpi_daily for all of them at once.
	-- A window over the groups gathers them all into each row, of which INTO
	-- takes the first (no LIMIT: PostgreSQL would plan for the first group,
	-- walking the index in the groups' order); with no group found_rows is
	-- NULL, which adds nothing to counted.
	IF rollup THEN
		SELECT array_agg(jsonb_build_array(user_id, metric, date_trunc('month', day::timestamp)::date,
		           coalesce(sum(n) FILTER (WHERE day >= period_from), 0), coalesce(sum(n) FILTER (WHERE day >= mtd_from), 0),
		           coalesce(sum(amount) FILTER (WHERE day >= period_from), 0), coalesce(sum(amount) FILTER (WHERE day >= mtd_from), 0))) OVER ()
		  INTO found_rows
		  FROM kpi_daily
		 WHERE account_id = acc AND user_id = ANY (planned) AND metric = ANY (sources) AND day BETWEEN lo AND period_to
		   AND (metric <> 4 OR type_id = ANY (invoice_types))
		 GROUP BY user_id, metric, date_trunc('month', day::timestamp);
		counted := counted || found_rows;
		sources := '{}'; -- every source is read
	END IF;
	IF 1 = ANY (sources) THEN
		SELECT array_agg(jsonb_build_array(user_id, 1, date_trunc('month', created_at AT TIME ZONE tz)::date,
		           count(*) FILTER (WHERE created_at >= start_at), count(*) FILTER (WHERE created_at >= mtd_at), 0, 0)) OVER ()
		  INTO found_rows
		  FROM companies
		 WHERE account_id = acc AND user_id = ANY (planned) AND deleted_at IS NULL AND created_at >= lo_at AND created_at < end_at
		 GROUP BY user_id, date_trunc('month', created_at AT TIME ZONE tz);
		counted := counted || found_rows;
	END IF;
	IF 2 = ANY (sources) THEN
		SELECT array_agg(jsonb_build_array(user_id, 2, date_trunc('month', done_at AT TIME ZONE tz)::date,
		           count(*) FILTER (WHERE done_at >= start_at), count(*) FILTER (WHERE done_at >= mtd_at), 0, 0)) OVER ()
		  INTO found_rows
		  FROM tasks
		 WHERE account_id = acc AND user_id = ANY (planned) AND done_at >= lo_at AND done_at < end_at
		 GROUP BY user_id, date_trunc('month', done_at AT TIME ZONE tz);
		counted := counted || found_rows;
	END IF;
	IF 3 = ANY (sources) THEN
		SELECT array_agg(jsonb_build_array(d.user_id, 3, date_trunc('month', d.created_at AT TIME ZONE tz)::date,
		           count(*) FILTER (WHERE d.created_at >= start_at), count(*) FILTER (WHERE d.created_at >= mtd_at),
		           coalesce(sum(d.sum) FILTER (WHERE d.created_at >= start_at), 0),
		           coalesce(sum(d.sum) FILTER (WHERE d.created_at >= mtd_at), 0))) OVER ()
		  INTO found_rows
		  FROM deals d
		 WHERE d.account_id = acc AND d.user_id = ANY (planned) AND d.created_at >= lo_at AND d.created_at < end_at
		 GROUP BY d.user_id, date_trunc('month', d.created_at AT TIME ZONE tz);
		counted := counted || found_rows;
	END IF;
	IF 4 = ANY (sources) THEN
		SELECT array_agg(jsonb_build_array(d.user_id, 4, date_trunc('month', d.date)::date,
		           count(*) FILTER (WHERE d.date >= period_from), count(*) FILTER (WHERE d.date >= mtd_from),
		           coalesce(sum(d.sum) FILTER (WHERE d.date >= period_from), 0),
		           coalesce(sum(d.sum) FILTER (WHERE d.date >= mtd_from), 0))) OVER ()
		  INTO found_rows
		  FROM documents d
		 WHERE d.account_id = acc AND d.user_id = ANY (planned) AND d.date BETWEEN lo AND period_to AND d.type_id = ANY (invoice_types)
		 GROUP BY d.user_id, date_trunc('month', d.date);
		counted := counted || found_rows;
	END IF;
	IF 5 = ANY (sources) THEN
		SELECT array_agg(jsonb_build_array(m.user_id, 5, date_trunc('month', m.date)::date, 0, 0,
		           coalesce(sum(m.sum) FILTER (WHERE m.date >= period_from), 0),
		           coalesce(sum(m.sum) FILTER (WHERE m.date >= mtd_from), 0))) OVER ()
		  INTO found_rows
		  FROM money_movements m
		 WHERE m.account_id = acc AND m.user_id = ANY (planned) AND NOT m.is_transfer AND m.direction = 1
		   AND m.date BETWEEN lo AND period_to
		 GROUP BY m.user_id, date_trunc('month', m.date);
		counted := counted || found_rows;
	END IF;

	-- No table from here on: the joined statement's expressions over the arrays.
	RETURN QUERY
	WITH plan AS (
		SELECT k.user_id, k.month, i.metric, i.name, i.measure, i.plan_value,
		       (k.month + interval '1 month')::date - k.month AS days,
		       greatest(0, least(period_to, (k.month + interval '1 month')::date - 1) - greatest(period_from, k.month) + 1) AS period_days,
		       greatest(0, least(period_to, (k.month + interval '1 month')::date - 1) - greatest(mtd_from, k.month) + 1) AS mtd_days
		  FROM unnest(item_plans, item_metrics, item_names, item_measures, item_values) AS i (plan_id, metric, name, measure, plan_value)
		  JOIN unnest(plan_ids, plan_users, plan_months) AS k (id, user_id, month) ON k.id = i.plan_id
	), actual AS (
		SELECT (c.v ->> 0)::bigint AS user_id, (c.v ->> 2)::date AS month, x.metric,
		       CASE WHEN x.amount THEN (c.v -> 5)::numeric ELSE (c.v -> 3)::numeric END AS period_value,
		       CASE WHEN x.amount THEN (c.v -> 6)::numeric ELSE (c.v -> 4)::numeric END AS mtd_value
		  FROM unnest(counted) AS c (v)
		  JOIN unnest(metric_names, metric_sources, metric_amounts) AS x (metric, source, amount) ON x.source = (c.v ->> 1)::smallint
	), items AS (
		SELECT pl.user_id, pl.metric, (array_agg(pl.name ORDER BY pl.month DESC))[1] AS name, min(pl.measure) AS measure,
		       sum(pl.plan_value * pl.period_days / pl.days) AS plan,
		       coalesce(sum(a.period_value), 0) AS actual,
		       sum(pl.plan_value * pl.mtd_days / pl.days) FILTER (WHERE pl.mtd_days > 0) AS mtd_plan,
		       coalesce(sum(a.mtd_value) FILTER (WHERE pl.mtd_days > 0), 0) AS mtd_actual
		  FROM plan pl
		  LEFT JOIN actual a ON a.user_id = pl.user_id AND a.month = pl.month AND a.metric = pl.metric
		 GROUP BY pl.user_id, pl.metric
	)
	SELECT i.user_id, i.metric, i.name, i.measure, i.plan, i.actual, least(i.actual * 100 / i.plan, 100),
	       i.mtd_plan, i.mtd_actual, CASE WHEN i.mtd_plan IS NOT NULL THEN least(i.mtd_actual * 100 / i.mtd_plan, 100) END
	  FROM items i;
END
$fn$;
