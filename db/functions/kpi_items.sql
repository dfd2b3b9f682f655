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
-- users with items, whose rows per user, source and month are kept in
-- arrays. The items are then computed from the arrays alone, by the
-- expressions of the joined statement, so that every number is the same to
-- the last decimal. Its first argument is not p_account, so Citus does not
-- distribute it: it runs where its caller runs.
CREATE OR REPLACE FUNCTION crm_kpi_items(acc bigint, staff bigint[], tz text, period_from date, period_to date,
	mtd_from date, rollup boolean)
RETURNS TABLE (o_user bigint, o_metric text, o_name text, o_measure text, o_plan numeric, o_actual numeric,
	o_progress numeric, o_mtd_plan numeric, o_mtd_actual numeric, o_mtd_progress numeric)
LANGUAGE plpgsql STABLE AS $fn$
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
	plans jsonb;             -- plan id -> [user id, month]
	plan_ids bigint[];
	-- The plan items, one element each.
	item_users bigint[];
	item_months date[];
	item_metrics text[];
	item_names text[];
	item_measures text[];
	item_values numeric[];
	planned bigint[];        -- the users with items
	sources smallint[];      -- the sources their metrics count
	invoice_types bigint[] := '{}';
	src smallint;
	source_rows refcursor;
	r record;
	-- The actual per user, source and month: the number and the sum of the
	-- records of the period (n, s) and of the month to date (mtd_n, mtd_s).
	a_users bigint[] := '{}';
	a_sources smallint[] := '{}';
	a_months date[] := '{}';
	a_n numeric[] := '{}';
	a_mtd_n numeric[] := '{}';
	a_s numeric[] := '{}';
	a_mtd_s numeric[] := '{}';
BEGIN
	SELECT jsonb_object_agg(id, jsonb_build_array(user_id, month)), array_agg(id) INTO plans, plan_ids
	  FROM kpi_plans
	 WHERE account_id = acc AND user_id = ANY (staff) AND month BETWEEN date_trunc('month', lo::timestamp)::date AND period_to;
	IF plan_ids IS NULL THEN
		RETURN;
	END IF;
	SELECT array_agg((plans -> plan_id::text ->> 0)::bigint), array_agg((plans -> plan_id::text ->> 1)::date),
	       array_agg(metric), array_agg(name), array_agg(measure), array_agg(plan_value)
	  INTO item_users, item_months, item_metrics, item_names, item_measures, item_values
	  FROM kpi_plan_items
	 WHERE account_id = acc AND plan_id = ANY (plan_ids);
	IF item_users IS NULL THEN
		RETURN;
	END IF;

	planned := ARRAY(SELECT DISTINCT u FROM unnest(item_users) u);
	sources := ARRAY(SELECT DISTINCT x.source FROM unnest(metric_names, metric_sources) AS x (metric, source)
	                  WHERE x.metric = ANY (item_metrics) ORDER BY 1);
	IF 4 = ANY (sources) THEN
		-- The account's invoice types of now, also for the days of kpi_daily,
		-- which keeps the documents of every type.
		SELECT coalesce(array_agg(id), '{}') INTO invoice_types
		  FROM directory_values WHERE account_id = acc AND directory_code = 44 AND is_invoice;
	END IF;
	-- One statement per source, or kpi_daily (0) for all of them at once; each
	-- statement's rows are gathered by the same loop.
	FOREACH src IN ARRAY CASE WHEN rollup THEN '{0}' ELSE sources END LOOP
		CASE
		WHEN src = 0 THEN
			OPEN source_rows FOR
			SELECT user_id, metric AS source, date_trunc('month', day::timestamp)::date AS month,
			       coalesce(sum(n) FILTER (WHERE day >= period_from), 0) AS n, coalesce(sum(n) FILTER (WHERE day >= mtd_from), 0) AS mtd_n,
			       coalesce(sum(amount) FILTER (WHERE day >= period_from), 0) AS s, coalesce(sum(amount) FILTER (WHERE day >= mtd_from), 0) AS mtd_s
			  FROM kpi_daily
			 WHERE account_id = acc AND user_id = ANY (planned) AND metric = ANY (sources) AND day BETWEEN lo AND period_to
			   AND (metric <> 4 OR type_id = ANY (invoice_types))
			 GROUP BY 1, 2, 3;
		WHEN src = 1 THEN
			OPEN source_rows FOR
			SELECT user_id, src AS source, date_trunc('month', created_at AT TIME ZONE tz)::date AS month,
			       count(*) FILTER (WHERE created_at >= start_at)::numeric AS n,
			       count(*) FILTER (WHERE created_at >= mtd_at)::numeric AS mtd_n, 0::numeric AS s, 0::numeric AS mtd_s
			  FROM companies
			 WHERE account_id = acc AND user_id = ANY (planned) AND deleted_at IS NULL AND created_at >= lo_at AND created_at < end_at
			 GROUP BY 1, 3;
		WHEN src = 2 THEN
			OPEN source_rows FOR
			SELECT user_id, src AS source, date_trunc('month', done_at AT TIME ZONE tz)::date AS month,
			       count(*) FILTER (WHERE done_at >= start_at)::numeric AS n,
			       count(*) FILTER (WHERE done_at >= mtd_at)::numeric AS mtd_n, 0::numeric AS s, 0::numeric AS mtd_s
			  FROM tasks
			 WHERE account_id = acc AND user_id = ANY (planned) AND done_at >= lo_at AND done_at < end_at
			 GROUP BY 1, 3;
		WHEN src = 3 THEN
			OPEN source_rows FOR
			SELECT d.user_id, src AS source, date_trunc('month', d.created_at AT TIME ZONE tz)::date AS month,
			       count(*) FILTER (WHERE d.created_at >= start_at)::numeric AS n,
			       count(*) FILTER (WHERE d.created_at >= mtd_at)::numeric AS mtd_n,
			       coalesce(sum(d.sum) FILTER (WHERE d.created_at >= start_at), 0) AS s,
			       coalesce(sum(d.sum) FILTER (WHERE d.created_at >= mtd_at), 0) AS mtd_s
			  FROM deals d
			 WHERE d.account_id = acc AND d.user_id = ANY (planned) AND d.created_at >= lo_at AND d.created_at < end_at
			 GROUP BY 1, 3;
		WHEN src = 4 THEN
			OPEN source_rows FOR
			SELECT d.user_id, src AS source, date_trunc('month', d.date)::date AS month,
			       count(*) FILTER (WHERE d.date >= period_from)::numeric AS n, count(*) FILTER (WHERE d.date >= mtd_from)::numeric AS mtd_n,
			       coalesce(sum(d.sum) FILTER (WHERE d.date >= period_from), 0) AS s,
			       coalesce(sum(d.sum) FILTER (WHERE d.date >= mtd_from), 0) AS mtd_s
			  FROM documents d
			 WHERE d.account_id = acc AND d.user_id = ANY (planned) AND d.date BETWEEN lo AND period_to AND d.type_id = ANY (invoice_types)
			 GROUP BY 1, 3;
		ELSE
			OPEN source_rows FOR
			SELECT m.user_id, src AS source, date_trunc('month', m.date)::date AS month, 0::numeric AS n, 0::numeric AS mtd_n,
			       coalesce(sum(m.sum) FILTER (WHERE m.date >= period_from), 0) AS s,
			       coalesce(sum(m.sum) FILTER (WHERE m.date >= mtd_from), 0) AS mtd_s
			  FROM money_movements m
			 WHERE m.account_id = acc AND m.user_id = ANY (planned) AND NOT m.is_transfer AND m.direction = 1
			   AND m.date BETWEEN lo AND period_to
			 GROUP BY 1, 3;
		END CASE;
		-- Every statement's row has the same types (user_id bigint, source
		-- smallint, month date, the rest numeric): PL/pgSQL keeps the plan of
		-- each assignment below for the types of the first row it met.
		LOOP
			FETCH source_rows INTO r;
			EXIT WHEN NOT FOUND;
			a_users := a_users || r.user_id;
			a_sources := a_sources || r.source;
			a_months := a_months || r.month;
			a_n := a_n || r.n;
			a_mtd_n := a_mtd_n || r.mtd_n;
			a_s := a_s || r.s;
			a_mtd_s := a_mtd_s || r.mtd_s;
		END LOOP;
		CLOSE source_rows;
	END LOOP;

	-- No table from here on: the joined statement's expressions over the arrays.
	RETURN QUERY
	WITH plan AS (
		SELECT p.user_id, p.month, p.metric, p.name, p.measure, p.plan_value,
		       (p.month + interval '1 month')::date - p.month AS days,
		       greatest(0, least(period_to, (p.month + interval '1 month')::date - 1) - greatest(period_from, p.month) + 1) AS period_days,
		       greatest(0, least(period_to, (p.month + interval '1 month')::date - 1) - greatest(mtd_from, p.month) + 1) AS mtd_days
		  FROM unnest(item_users, item_months, item_metrics, item_names, item_measures, item_values)
		       AS p (user_id, month, metric, name, measure, plan_value)
	), actual AS (
		SELECT a.user_id, a.month, x.metric,
		       CASE WHEN x.amount THEN a.s ELSE a.n END AS period_value,
		       CASE WHEN x.amount THEN a.mtd_s ELSE a.mtd_n END AS mtd_value
		  FROM unnest(a_users, a_sources, a_months, a_n, a_mtd_n, a_s, a_mtd_s) AS a (user_id, source, month, n, mtd_n, s, mtd_s)
		  JOIN unnest(metric_names, metric_sources, metric_amounts) AS x (metric, source, amount) ON x.source = a.source
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
