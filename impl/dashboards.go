package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lib/pq"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/crmservice/crm/gen"
)

// maxPeriodDays bounds the period of every dashboard, so that one request never
// aggregates more than a year of an account's records.
const maxPeriodDays = 366

// kpiMetrics are what a KPI plan item can measure (kpi_plan_items.metric), in
// the order the dashboards list the items.
var kpiMetrics = []string{"companies_added", "tasks_done", "deals_created", "deal_sum", "invoices_issued", "invoice_sum", "income"}

// Access texts of the team KPI lists (KpiTeam.users_access, departments_access).
const (
	accessOK                = "ok"
	accessNoUsersRight      = "no right to the users KPI report"
	accessNoDepartmentRight = "no right to the departments KPI report"
	accessDepartmentGiven   = "not returned when department_id is given"
)

// period is a span of whole days of the token owner's time zone, both ends
// included. Its times are midnights in UTC, used only as calendar dates.
type period struct{ from, to time.Time }

func firstOfMonth(d time.Time) time.Time {
	return time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func sameDay(d time.Time) time.Time { return d }

// today is the current date in the time zone tz.
func (s *Server) today(ctx context.Context, tz string) (time.Time, error) {
	var d string
	if err := s.db(ctx).GetContext(ctx, &d, `SELECT to_char(now() AT TIME ZONE $1::text, 'YYYY-MM-DD')`, tz); err != nil {
		return time.Time{}, fmt.Errorf("today in %s: %w", tz, err)
	}
	return time.Parse(time.DateOnly, d)
}

// fillDays returns the day anchor, or today in the token owner's time zone when
// it is missing, and the day other, or derive(anchor day) when it is missing.
func (s *Server) fillDays(ctx context.Context, p *Principal, anchor, other *openapi_types.Date,
	derive func(time.Time) time.Time) (time.Time, time.Time, error) {
	var a time.Time
	if anchor != nil {
		a = anchor.Time
	} else {
		today, err := s.today(ctx, p.TimeZone)
		if err != nil {
			return a, a, err
		}
		a = today
	}
	if other != nil {
		return a, other.Time, nil
	}
	return a, derive(a), nil
}

// checkPeriod refuses a period that ends before it starts or is longer than
// maxPeriodDays; fromName and toName are the parameters of its days.
func checkPeriod(pd period, fromName, toName string) error {
	from, to := pd.from.Format(time.DateOnly), pd.to.Format(time.DateOnly)
	if pd.from.After(pd.to) {
		return badRequest("query parameter %q: %s is before %q %s", toName, to, fromName, from)
	}
	if days := int(pd.to.Sub(pd.from).Hours()/24) + 1; days > maxPeriodDays {
		return badRequest("query parameter %q: the period %s..%s has %d days; at most %d are allowed",
			toName, from, to, days, maxPeriodDays)
	}
	return nil
}

// dayPeriod resolves date and date_to of the day dashboards: "date (start of
// period, default today), date_to (end, default equal to date)".
func (s *Server) dayPeriod(ctx context.Context, p *Principal, date, dateTo *openapi_types.Date) (period, error) {
	from, to, err := s.fillDays(ctx, p, date, dateTo, sameDay)
	if err != nil {
		return period{}, err
	}
	pd := period{from, to}
	return pd, checkPeriod(pd, "date", "date_to")
}

// kpiPeriod resolves date_from and date_to of the KPI dashboards: "date_from
// (default first day of the month of date_to), date_to (default today)".
func (s *Server) kpiPeriod(ctx context.Context, p *Principal, dateFrom, dateTo *openapi_types.Date) (period, error) {
	to, from, err := s.fillDays(ctx, p, dateTo, dateFrom, firstOfMonth)
	if err != nil {
		return period{}, err
	}
	pd := period{from, to}
	return pd, checkPeriod(pd, "date_from", "date_to")
}

// dashboardValue runs a dashboard statement and returns the value it builds.
func (s *Server) dashboardValue(ctx context.Context, q *dashQuery, query string) (string, error) {
	var value string
	if err := s.stmts(ctx).get(ctx, &value, query, q.args...); err != nil {
		return "", err
	}
	return value, nil
}

// dashQuery builds the one statement of a dashboard: the slots of sqlFor and
// {from}, {to}, the days of the period. Each part of the statement is expanded
// when it is built (sql), so a slot a part sets holds for that part only.
type dashQuery struct {
	*sqlText
	p *Principal
}

func newDashQuery(p *Principal, pd period) *dashQuery {
	q := &dashQuery{sqlText: sqlFor(p), p: p}
	q.bind("from", pd.from.Format(time.DateOnly))
	q.bind("to", pd.to.Format(time.DateOnly))
	q.set("visible", p.visibleUsers())
	q.set("deadline", taskDeadline)
	return q
}

// sql sets the slots given as name, fragment pairs and expands template.
func (q *dashQuery) sql(template string, slots ...string) string {
	for i := 0; i+1 < len(slots); i += 2 {
		q.set(slots[i], slots[i+1])
	}
	return q.expand(template)
}

// start is the first moment of the day d (a date expression) in the token
// owner's time zone; end the first moment after the day d.
func start(d string) string { return "(" + d + "::date::timestamp AT TIME ZONE {tz}::text)" }

func end(d string) string { return "((" + d + "::date + 1)::timestamp AT TIME ZONE {tz}::text)" }

// overdueTasks is the template of a SELECT of the assignee and assigner of the
// visible unfinished tasks due before {start}: one index range of the account
// for an admin, for others the ranges of the visible users as assignees and as
// assigners (dash_tasks_open_user, dash_tasks_open_assigner).
func overdueTasks(q *dashQuery) string {
	if q.p.Role == RoleAdmin {
		return `SELECT t.user_id, t.assigner_id FROM tasks t
			 WHERE t.account_id = {acc} AND t.status_id = 1 AND {deadline} < {start}`
	}
	return `SELECT t.id, t.user_id, t.assigner_id FROM tasks t
		 WHERE t.account_id = {acc} AND t.status_id = 1 AND t.user_id = ANY ({visible}) AND {deadline} < {start}
		UNION
		SELECT t.id, t.user_id, t.assigner_id FROM tasks t
		 WHERE t.account_id = {acc} AND t.status_id = 1 AND t.assigner_id = ANY ({visible}) AND {deadline} < {start}`
}

// taskDeadline is the moment by which a task t is due: its finish, or its start
// when it has none (the expression of the dash_tasks_* indexes).
const taskDeadline = "coalesce(t.date_finish, t.date_start)"

// DashboardMyDay implements GET /dashboard/my/day: every counter of the period
// in one statement.
func (s *Server) DashboardMyDay(ctx context.Context, req gen.DashboardMyDayRequestObject) (gen.DashboardMyDayResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if s.fastPath {
		from, to, err := dayDays(req.Params.Date, req.Params.DateTo)
		if err != nil {
			return nil, err
		}
		value, err := s.periodValue(ctx, dayCall, "date", "date_to",
			p.callerArgs(p.UserName, from, to, maxPeriodDays, kpiRollup(p), pq.Array(kpiMetrics))...)
		if err != nil {
			return nil, fmt.Errorf("day dashboard: %w", err)
		}
		return gen.DashboardMyDay200JSONResponse(success(value)), nil
	}
	pd, err := s.dayPeriod(ctx, p, req.Params.Date, req.Params.DateTo)
	if err != nil {
		return nil, err
	}
	q := newDashQuery(p, pd)
	query := daySQL(q)
	value, err := s.dashboardValue(ctx, q, query)
	if err != nil {
		return nil, fmt.Errorf("day dashboard: %w", err)
	}
	return gen.DashboardMyDay200JSONResponse(success(value)), nil
}

// daySQL is the statement of GET /dashboard/my/day.
func daySQL(q *dashQuery) string {
	return q.sql(`
		SELECT jsonb_build_object(
			'period', jsonb_build_object('date_from', {from}::date, 'date_to', {to}::date),
			'user', jsonb_build_object('id', {me}::bigint, 'name', {name}::text),
			'companies_added', (
				SELECT jsonb_build_object('total', count(*), 'mine', count(*) FILTER (WHERE c.user_id = {me}))
				  FROM companies c
				 WHERE c.account_id = {acc} AND c.user_id = ANY ({visible}) AND c.deleted_at IS NULL
				   AND c.created_at >= {start} AND c.created_at < {end}),
			'tasks', (
				WITH counted AS (
					SELECT t.type_id, true AS scheduled, {mineTask} AS mine
					  FROM tasks t
					 WHERE t.account_id = {acc} AND {deadline} >= {start} AND {deadline} < {end} AND {visibleTasks}
					UNION ALL
					SELECT t.type_id, false, {mineTask}
					  FROM tasks t
					 WHERE t.account_id = {acc} AND t.done_at >= {start} AND t.done_at < {end} AND {visibleTasks}
				), by_type AS (
					SELECT type_id, count(*) FILTER (WHERE scheduled) AS total, count(*) FILTER (WHERE NOT scheduled) AS done,
					       count(*) FILTER (WHERE scheduled AND mine) AS mine,
					       count(*) FILTER (WHERE NOT scheduled AND mine) AS mine_done
					  FROM counted
					 GROUP BY type_id
				), overdue AS (
					SELECT count(*) AS total, count(*) FILTER (WHERE {mineTask}) AS mine
					  FROM ({overdueTasks}) t
				)
				SELECT jsonb_build_object(
					'scheduled_total', coalesce(sum(b.total), 0), 'done_total', coalesce(sum(b.done), 0),
					'mine_scheduled', coalesce(sum(b.mine), 0), 'mine_done', coalesce(sum(b.mine_done), 0),
					'overdue_total', (SELECT total FROM overdue), 'mine_overdue', (SELECT mine FROM overdue),
					'by_type', coalesce(jsonb_agg(jsonb_build_object('type', coalesce(ty.name, ''), 'total', b.total,
						'done', b.done, 'mine', b.mine, 'mine_done', b.mine_done) ORDER BY ty.sort, ty.name, b.type_id), '[]'))
				  FROM by_type b
				  LEFT JOIN directory_values ty ON ty.account_id = {acc} AND ty.id = b.type_id),
			'deals_created', (
				SELECT jsonb_build_object('total', count(*), 'total_sum', coalesce(sum(d.sum), 0),
					'mine', count(*) FILTER (WHERE d.user_id = {me}),
					'mine_sum', coalesce(sum(d.sum) FILTER (WHERE d.user_id = {me}), 0))
				  FROM deals d
				 WHERE d.account_id = {acc} AND d.user_id = ANY ({visible}) AND d.created_at >= {start} AND d.created_at < {end}),
			'invoices_issued', (
				SELECT jsonb_build_object('total', count(*), 'total_sum', coalesce(sum(d.sum), 0),
					'mine', count(*) FILTER (WHERE d.user_id = {me}),
					'mine_sum', coalesce(sum(d.sum) FILTER (WHERE d.user_id = {me}), 0))
				  FROM documents d
				 WHERE d.account_id = {acc} AND d.user_id = ANY ({visible}) AND d.date BETWEEN {from}::date AND {to}::date
				   AND d.type_id = ANY (`+invoiceTypes+`)),
			'money', (
				SELECT jsonb_build_object(
					'income', coalesce(sum(m.sum) FILTER (WHERE m.direction = 1), 0),
					'income_count', count(*) FILTER (WHERE m.direction = 1),
					'mine_income', coalesce(sum(m.sum) FILTER (WHERE m.direction = 1 AND m.user_id = {me}), 0),
					'expense', coalesce(sum(m.sum) FILTER (WHERE m.direction = 2), 0),
					'expense_count', count(*) FILTER (WHERE m.direction = 2))
				  FROM money_movements m
				 WHERE m.account_id = {acc} AND m.user_id = ANY ({visible}) AND NOT m.is_transfer
				   AND m.date BETWEEN {from}::date AND {to}::date),
			'forgotten_companies', (
				SELECT jsonb_build_object('total', count(*), 'mine', count(*) FILTER (WHERE c.user_id = {me}))
				  FROM companies c
				 WHERE c.account_id = {acc} AND c.deleted_at IS NULL AND {visibleCompanies}
				   AND c.type_id = ANY (ARRAY(SELECT v.id FROM directory_values v
				                               WHERE v.account_id = {acc} AND v.directory_code = {dirTypes} AND v.is_controlled))
				   AND NOT EXISTS (SELECT FROM tasks t
				                    WHERE t.account_id = {acc} AND t.company_id = c.id AND t.status_id = 1
				                      AND {deadline} >= {end})),
			'my_kpi', {kpi})::text`,
		"name", q.arg(q.p.UserName),
		"start", start("{from}"), "end", end("{to}"),
		"visibleTasks", q.p.seesTask("t"), "overdueTasks", overdueTasks(q),
		"visibleCompanies", q.p.seesOwner("c.user_id"),
		"mineTask", ownsTask("t"),
		"dirTypes", strconv.Itoa(DirCompanyTypes),
		"kpi", kpiMyJSON(q))
}

// invoiceTypes is the SQL array of the account's document types that are
// invoices (an InitPlan, so that the type is an index condition).
const invoiceTypes = `ARRAY(SELECT iv.id FROM directory_values iv
	WHERE iv.account_id = {acc} AND iv.directory_code = 44 AND iv.is_invoice)`

// DashboardMyTasks implements GET /dashboard/my/tasks.
func (s *Server) DashboardMyTasks(ctx context.Context, req gen.DashboardMyTasksRequestObject) (gen.DashboardMyTasksResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	limit := 30
	if req.Params.OverdueLimit != nil {
		limit = *req.Params.OverdueLimit
	}
	if s.fastPath {
		var date any
		if req.Params.Date != nil {
			date = req.Params.Date.Time.Format(time.DateOnly)
		}
		var value sql.NullString
		if err := s.stmts(ctx).get(ctx, &value, s.call(myTasksCall), p.callerArgs(date, limit)...); err != nil {
			return nil, fmt.Errorf("tasks dashboard: %w", err)
		}
		if !value.Valid {
			return nil, errors.New("tasks dashboard: no value")
		}
		return gen.DashboardMyTasks200JSONResponse(success(value.String)), nil
	}
	pd, err := s.dayPeriod(ctx, p, req.Params.Date, nil)
	if err != nil {
		return nil, err
	}
	q := newDashQuery(p, pd)
	query := myTasksSQL(q, limit)
	value, err := s.dashboardValue(ctx, q, query)
	if err != nil {
		return nil, fmt.Errorf("tasks dashboard: %w", err)
	}
	return gen.DashboardMyTasks200JSONResponse(success(value)), nil
}

// myTasksSQL is the statement of GET /dashboard/my/tasks.
func myTasksSQL(q *dashQuery, limit int) string {
	// The overdue tasks are read as two index ranges, of the owner as assignee
	// and as assigner (dash_tasks_open_user, dash_tasks_open_assigner).
	return q.sql(`
		WITH today AS (
			SELECT t.id, t.status_id, {deadline} AS deadline
			  FROM tasks t
			 WHERE t.account_id = {acc} AND {deadline} >= {start} AND {deadline} < {end}
			   AND (t.user_id = {me} OR t.assigner_id = {me})
		), overdue AS (
			SELECT t.id, {deadline} AS deadline
			  FROM tasks t
			 WHERE t.account_id = {acc} AND t.status_id = 1 AND t.user_id = {me} AND {deadline} < {start}
			UNION
			SELECT t.id, {deadline}
			  FROM tasks t
			 WHERE t.account_id = {acc} AND t.status_id = 1 AND t.assigner_id = {me} AND {deadline} < {start}
		), shown AS (
			SELECT id, deadline FROM overdue ORDER BY deadline DESC, id DESC LIMIT {limit}
		)
		SELECT jsonb_build_object(
			'date', {from}::date,
			'today', jsonb_build_object(
				'total', (SELECT count(*) FROM today),
				'done', (SELECT count(*) FROM today WHERE status_id = 2),
				'tasks', coalesce((SELECT jsonb_agg({task} ORDER BY x.deadline, x.id)
				                     FROM today x JOIN tasks t ON t.account_id = {acc} AND t.id = x.id {joins}), '[]')),
			'overdue', jsonb_build_object(
				'total', (SELECT count(*) FROM overdue),
				'shown', (SELECT count(*) FROM shown),
				'tasks', coalesce((SELECT jsonb_agg({task} ORDER BY x.deadline DESC, x.id DESC)
				                     FROM shown x JOIN tasks t ON t.account_id = {acc} AND t.id = x.id {joins}), '[]')))::text`,
		"start", start("{from}"), "end", end("{to}"),
		"limit", q.arg(limit), "task", dashboardTaskJSON, "joins", dashboardTaskJoins)
}

// dashboardTaskJSON is the DashboardTask object of the task t.
const dashboardTaskJSON = `jsonb_build_object('id', t.id, 'type', coalesce(ty.name, ''),
	'status', CASE WHEN t.status_id = 2 THEN 'done' ELSE 'in work' END, 'done', t.status_id = 2,
	'date_start', to_char(t.date_start AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
	'date_finish', to_char(t.date_finish AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
	'company_id', t.company_id, 'company_name', coalesce(CASE WHEN {c_seen} THEN c.name END, ''), 'deal_id', t.deal_id,
	'note', t.note, 'result', t.result)`

// dashboardTaskJoins brings the names a DashboardTask shows for the task t.
const dashboardTaskJoins = `
	LEFT JOIN directory_values ty ON ty.account_id = {acc} AND ty.id = t.type_id
	LEFT JOIN companies c ON c.account_id = {acc} AND c.id = t.company_id`

// kpiItemsSQL is a SELECT of KPI items: one row per user and metric, with the
// plan recalculated to the period {from}..{to}, the actual and the progress
// (percent, at most 100), and the same for the days mtdFrom..{to} (mtd_plan,
// mtd_actual, mtd_progress: null when the month of {to} has no plan item of the
// metric). The plans are those of the users u that pass planUsers; actualUsers
// is the condition on a record's user column that keeps their records.
//
// Each month a period touches counts with the days the period has in it: the
// month's plan item with plan_value × those days / the days of the month, and
// the records of those days. A month without a plan item of the metric counts
// for neither. The records are read once for both periods: they end on the
// same day.
func kpiItemsSQL(q *dashQuery, planUsers string, actualUsers func(col string) string, mtdFrom string) string {
	q.set("lo", "least({from}::date, "+mtdFrom+")")
	q.set("mtd", mtdFrom)
	return q.sql(`
		WITH plan AS (
			SELECT kp.user_id, kp.month, i.metric, i.name, i.measure, i.plan_value,
			       (kp.month + interval '1 month')::date - kp.month AS days,
			       greatest(0, least({to}::date, (kp.month + interval '1 month')::date - 1) - greatest({from}::date, kp.month) + 1) AS period_days,
			       greatest(0, least({to}::date, (kp.month + interval '1 month')::date - 1) - greatest({mtd}, kp.month) + 1) AS mtd_days
			  FROM kpi_plans kp
			  JOIN users u ON u.account_id = {acc} AND u.id = kp.user_id
			  JOIN kpi_plan_items i ON i.account_id = {acc} AND i.plan_id = kp.id
			 WHERE kp.account_id = {acc} AND kp.month BETWEEN date_trunc('month', {lo}::timestamp)::date AND {to}::date
			   AND {planUsers}
		), actual AS (`+kpiActualSQL(q, actualUsers)+`
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
		SELECT user_id, metric, name, measure, plan, actual, least(actual * 100 / plan, 100) AS progress,
		       mtd_plan, mtd_actual, CASE WHEN mtd_plan IS NOT NULL THEN least(mtd_actual * 100 / mtd_plan, 100) END AS mtd_progress
		  FROM items`,
		"planUsers", planUsers)
}

// kpiRollup reports whether the KPI of p is read from kpi_daily (migration
// 0068), whose days are those of the account's time zone: only when they are
// p's days too. Another zone moves the boundaries of the days, so its KPI is
// counted from the records.
func kpiRollup(p *Principal) bool {
	return p.AccountTimeZone != "" && p.TimeZone == p.AccountTimeZone
}

// kpiActualSQL is the SELECT of the actual of kpiItemsSQL: per user, month
// (of {tz}) and metric, the value of the days {from}..{to} (period_value) and
// of {mtd}..{to} (mtd_value), read from the days {lo}..{to}. Both ways give
// the same rows and numbers: the rollup holds the counts and sums of the same
// records per day, and a row only while it has records.
func kpiActualSQL(q *dashQuery, actualUsers func(col string) string) string {
	if kpiRollup(q.p) {
		// Documents of every type are kept, so that the account's invoice types
		// are those of now, as in the count from the records.
		return q.sql(`
			SELECT g.user_id, g.month, x.metric,
			       CASE WHEN x.amount THEN g.s ELSE g.n END AS period_value,
			       CASE WHEN x.amount THEN g.mtd_s ELSE g.mtd_n END AS mtd_value
			  FROM (SELECT k.user_id, k.metric, date_trunc('month', k.day::timestamp)::date AS month,
			               coalesce(sum(k.n) FILTER (WHERE k.day >= {from}::date), 0) AS n,
			               coalesce(sum(k.n) FILTER (WHERE k.day >= {mtd}), 0) AS mtd_n,
			               coalesce(sum(k.amount) FILTER (WHERE k.day >= {from}::date), 0) AS s,
			               coalesce(sum(k.amount) FILTER (WHERE k.day >= {mtd}), 0) AS mtd_s
			          FROM kpi_daily k
			         WHERE k.account_id = {acc} AND {kpiUser} AND k.metric = ANY ('{1,2,3,4,5}'::smallint[])
			           AND k.day BETWEEN {lo} AND {to}::date
			           AND (k.metric <> 4 OR k.type_id = ANY (`+invoiceTypes+`))
			         GROUP BY 1, 2, 3) g
			  JOIN (VALUES (1, 'companies_added', false), (2, 'tasks_done', false), (3, 'deals_created', false), (3, 'deal_sum', true),
			               (4, 'invoices_issued', false), (4, 'invoice_sum', true), (5, 'income', true)) AS x (id, metric, amount)
			    ON x.id = g.metric`,
			"kpiUser", actualUsers("k.user_id"))
	}
	month := func(ts string) string { return "date_trunc('month', " + ts + " AT TIME ZONE {tz}::text)::date" }
	return q.sql(`
			SELECT c.user_id, {companyMonth} AS month, 'companies_added' AS metric,
			       count(*) FILTER (WHERE c.created_at >= {start})::numeric AS period_value,
			       count(*) FILTER (WHERE c.created_at >= {mtdStart})::numeric AS mtd_value
			  FROM companies c
			 WHERE c.account_id = {acc} AND {companyUser} AND c.deleted_at IS NULL
			   AND c.created_at >= {loStart} AND c.created_at < {end}
			 GROUP BY 1, 2
			UNION ALL
			SELECT t.user_id, {taskMonth}, 'tasks_done',
			       count(*) FILTER (WHERE t.done_at >= {start}), count(*) FILTER (WHERE t.done_at >= {mtdStart})
			  FROM tasks t
			 WHERE t.account_id = {acc} AND {taskUser} AND t.done_at >= {loStart} AND t.done_at < {end}
			 GROUP BY 1, 2
			UNION ALL
			SELECT g.user_id, g.month, x.metric, x.period_value, x.mtd_value
			  FROM (SELECT d.user_id, {dealMonth} AS month,
			               count(*) FILTER (WHERE d.created_at >= {start}) AS n, count(*) FILTER (WHERE d.created_at >= {mtdStart}) AS mtd_n,
			               coalesce(sum(d.sum) FILTER (WHERE d.created_at >= {start}), 0) AS s,
			               coalesce(sum(d.sum) FILTER (WHERE d.created_at >= {mtdStart}), 0) AS mtd_s
			          FROM deals d
			         WHERE d.account_id = {acc} AND {dealUser} AND d.created_at >= {loStart} AND d.created_at < {end}
			         GROUP BY 1, 2) g
			 CROSS JOIN LATERAL (VALUES ('deals_created', g.n::numeric, g.mtd_n::numeric), ('deal_sum', g.s, g.mtd_s))
			       AS x (metric, period_value, mtd_value)
			UNION ALL
			SELECT g.user_id, g.month, x.metric, x.period_value, x.mtd_value
			  FROM (SELECT d.user_id, date_trunc('month', d.date)::date AS month,
			               count(*) FILTER (WHERE d.date >= {from}::date) AS n, count(*) FILTER (WHERE d.date >= {mtd}) AS mtd_n,
			               coalesce(sum(d.sum) FILTER (WHERE d.date >= {from}::date), 0) AS s,
			               coalesce(sum(d.sum) FILTER (WHERE d.date >= {mtd}), 0) AS mtd_s
			          FROM documents d
			         WHERE d.account_id = {acc} AND {documentUser} AND d.date BETWEEN {lo} AND {to}::date
			           AND d.type_id = ANY (`+invoiceTypes+`)
			         GROUP BY 1, 2) g
			 CROSS JOIN LATERAL (VALUES ('invoices_issued', g.n::numeric, g.mtd_n::numeric), ('invoice_sum', g.s, g.mtd_s))
			       AS x (metric, period_value, mtd_value)
			UNION ALL
			SELECT m.user_id, date_trunc('month', m.date)::date, 'income',
			       coalesce(sum(m.sum) FILTER (WHERE m.date >= {from}::date), 0), coalesce(sum(m.sum) FILTER (WHERE m.date >= {mtd}), 0)
			  FROM money_movements m
			 WHERE m.account_id = {acc} AND {moneyUser} AND NOT m.is_transfer AND m.direction = 1
			   AND m.date BETWEEN {lo} AND {to}::date
			 GROUP BY 1, 2`,
		"start", start("{from}"), "mtdStart", start("{mtd}"), "loStart", start("{lo}"), "end", end("{to}"),
		"companyMonth", month("c.created_at"), "taskMonth", month("t.done_at"), "dealMonth", month("d.created_at"),
		"companyUser", actualUsers("c.user_id"), "taskUser", actualUsers("t.user_id"), "dealUser", actualUsers("d.user_id"),
		"documentUser", actualUsers("d.user_id"), "moneyUser", actualUsers("m.user_id"))
}

// kpiMyJSON is the KpiMy object of the token owner for the dashboard's period.
func kpiMyJSON(q *dashQuery) string {
	mtdFrom := "date_trunc('month', {to}::date::timestamp)::date"
	items := kpiItemsSQL(q, "kp.user_id = {me}", func(col string) string { return col + " = {me}" }, mtdFrom)
	return q.sql(`(
		WITH items AS (`+items+`)
		SELECT CASE WHEN NOT EXISTS (SELECT FROM items) THEN jsonb_build_object('has_kpi', false)
		ELSE jsonb_build_object(
			'has_kpi', true,
			'period', jsonb_build_object('date_from', {from}::date, 'date_to', {to}::date),
			'period_progress_percent', (SELECT round(avg(progress), 2) FROM items),
			'month_to_date_progress_percent', (SELECT round(avg(mtd_progress), 2) FROM items),
			'month_to_date', jsonb_build_object('date_from', {mtd}, 'date_to', {to}::date),
			'month_items', (SELECT jsonb_agg(jsonb_build_object('name', name, 'measure', measure, 'plan', round(plan, 2),
				'actual', actual, 'progress_percent', round(progress, 2)) ORDER BY array_position({metrics}::text[], metric))
				FROM items))
		END)`,
		"mtd", mtdFrom, "metrics", q.arg(pq.Array(kpiMetrics)))
}

// DashboardKpiMy implements GET /dashboard/kpi/my.
func (s *Server) DashboardKpiMy(ctx context.Context, req gen.DashboardKpiMyRequestObject) (gen.DashboardKpiMyResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if s.fastPath {
		from, to, err := kpiDays(req.Params.DateFrom, req.Params.DateTo)
		if err != nil {
			return nil, err
		}
		value, err := s.periodValue(ctx, kpiMyCall, "date_from", "date_to",
			p.callerArgs(from, to, maxPeriodDays, kpiRollup(p), pq.Array(kpiMetrics))...)
		if err != nil {
			return nil, fmt.Errorf("own KPI: %w", err)
		}
		return gen.DashboardKpiMy200JSONResponse(success(value)), nil
	}
	pd, err := s.kpiPeriod(ctx, p, req.Params.DateFrom, req.Params.DateTo)
	if err != nil {
		return nil, err
	}
	q := newDashQuery(p, pd)
	value, err := s.dashboardValue(ctx, q, "SELECT "+kpiMyJSON(q)+"::text")
	if err != nil {
		return nil, fmt.Errorf("own KPI: %w", err)
	}
	return gen.DashboardKpiMy200JSONResponse(success(value)), nil
}

// kpiDays are date_from and date_to of a KPI dashboard as far as the server
// knows them without the database, as arguments of crm_kpi_my and
// crm_kpi_team (db/functions): with date_to both days, checked (date_from
// defaults to the first of date_to's month); without it, whose default is
// today in the owner's time zone, date_from or NULL and NULL, which the
// function fills and checks itself (periodReply.refused).
func kpiDays(dateFrom, dateTo *openapi_types.Date) (from, to any, err error) {
	if dateTo == nil {
		if dateFrom != nil {
			from = dateFrom.Time.Format(time.DateOnly)
		}
		return from, nil, nil
	}
	pd := period{firstOfMonth(dateTo.Time), dateTo.Time}
	if dateFrom != nil {
		pd.from = dateFrom.Time
	}
	if err := checkPeriod(pd, "date_from", "date_to"); err != nil {
		return nil, nil, err
	}
	return pd.from.Format(time.DateOnly), pd.to.Format(time.DateOnly), nil
}

// dayDays are date and date_to of the day dashboard as far as the server
// knows them without the database, as arguments of crm_dash_day
// (db/functions): both days, checked, when date is given (date_to defaults to
// it); otherwise NULL and date_to or NULL, which the function fills (date is
// today in the owner's time zone) and checks itself (periodReply.refused).
func dayDays(date, dateTo *openapi_types.Date) (from, to any, err error) {
	if date == nil {
		if dateTo != nil {
			to = dateTo.Time.Format(time.DateOnly)
		}
		return nil, to, nil
	}
	pd := period{date.Time, date.Time}
	if dateTo != nil {
		pd.to = dateTo.Time
	}
	if err := checkPeriod(pd, "date", "date_to"); err != nil {
		return nil, nil, err
	}
	return pd.from.Format(time.DateOnly), pd.to.Format(time.DateOnly), nil
}

// periodReply is the row of crm_dash_day, crm_kpi_my and crm_kpi_team: the
// days they took, what they refused (error: 'department', a department out of the caller's
// scope) and the dashboard's JSON, NULL when they refused the days or error
// is set.
type periodReply struct {
	From  time.Time      `db:"date_from"`
	To    time.Time      `db:"date_to"`
	Error sql.NullString `db:"error"`
	Value sql.NullString `db:"value"`
}

// periodValue runs call, a function of a dashboard over a period (a
// periodReply), and returns its JSON, or the refusal of the days it took;
// fromName and toName are the parameters of the days.
func (s *Server) periodValue(ctx context.Context, call callStmt, fromName, toName string, args ...any) (string, error) {
	var r periodReply
	if err := s.stmts(ctx).get(ctx, &r, s.call(call), args...); err != nil {
		return "", err
	}
	if !r.Value.Valid {
		return "", r.refused(fromName, toName)
	}
	return r.Value.String, nil
}

// refused is the error of a reply without a value that names no error: the
// days the function took are out of checkPeriod's bounds; fromName and
// toName are the parameters of the days.
func (r *periodReply) refused(fromName, toName string) error {
	if err := checkPeriod(period{r.From, r.To}, fromName, toName); err != nil {
		return err
	}
	return fmt.Errorf("dashboard: no value for the period %s..%s", r.From.Format(time.DateOnly), r.To.Format(time.DateOnly))
}

// DashboardKpiTeam implements GET /dashboard/kpi/team.
func (s *Server) DashboardKpiTeam(ctx context.Context, req gen.DashboardKpiTeamRequestObject) (gen.DashboardKpiTeamResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if !p.KPIUsersReport && !p.KPIDepartmentsReport {
		return nil, &Error{Code: CodeForbidden, Msg: "no rights to the KPI reports of users and departments"}
	}
	usersAccess, deptsAccess := accessOK, accessOK
	if !p.KPIUsersReport {
		usersAccess = accessNoUsersRight
	}
	switch {
	case req.Params.DepartmentId != nil:
		deptsAccess = accessDepartmentGiven
	case !p.KPIDepartmentsReport:
		deptsAccess = accessNoDepartmentRight
	}
	if s.fastPath {
		from, to, err := kpiDays(req.Params.DateFrom, req.Params.DateTo)
		if err != nil {
			return nil, err
		}
		var r periodReply
		err = s.stmts(ctx).get(ctx, &r, s.call(kpiTeamCall),
			p.callerArgs(from, to, maxPeriodDays, kpiRollup(p), req.Params.DepartmentId, usersAccess, deptsAccess)...)
		switch {
		case err != nil:
			return nil, fmt.Errorf("team KPI: %w", err)
		case r.Error.String == "department":
			return nil, missingDepartment(*req.Params.DepartmentId)
		case !r.Value.Valid:
			return nil, r.refused("date_from", "date_to")
		}
		return gen.DashboardKpiTeam200JSONResponse(success(r.Value.String)), nil
	}
	pd, err := s.kpiPeriod(ctx, p, req.Params.DateFrom, req.Params.DateTo)
	if err != nil {
		return nil, err
	}
	q := newDashQuery(p, pd)
	scope, err := s.kpiTeamScope(ctx, q, req.Params.DepartmentId)
	if err != nil {
		return nil, err
	}
	query := kpiTeamSQL(q, scope, usersAccess, deptsAccess)
	value, err := s.dashboardValue(ctx, q, query)
	if err != nil {
		return nil, fmt.Errorf("team KPI: %w", err)
	}
	return gen.DashboardKpiTeam200JSONResponse(success(value)), nil
}

// kpiTeamSQL is the statement of GET /dashboard/kpi/team for the staff that
// passes scope, with the lists whose access is "ok".
func kpiTeamSQL(q *dashQuery, scope, usersAccess, deptsAccess string) string {
	items := kpiItemsSQL(q, scope, func(col string) string { return col + " = ANY (ARRAY(SELECT DISTINCT user_id FROM plan))" }, "{from}::date")
	return q.sql(`
		WITH items AS (`+items+`), users_progress AS (
			SELECT i.user_id, u.name, u.department_id, coalesce(dp.name, '') AS department, avg(i.progress) AS progress
			  FROM items i
			  JOIN users u ON u.account_id = {acc} AND u.id = i.user_id
			  LEFT JOIN departments dp ON dp.account_id = {acc} AND dp.id = u.department_id
			 GROUP BY i.user_id, u.name, u.department_id, dp.name
		), departments_progress AS (
			SELECT department_id, department AS name, avg(progress) AS progress
			  FROM users_progress
			 WHERE department_id IS NOT NULL
			 GROUP BY department_id, department
		)
		SELECT jsonb_build_object(
			'period', jsonb_build_object('date_from', {from}::date, 'date_to', {to}::date),
			'users', CASE WHEN {usersAccess}::text = 'ok' THEN
				coalesce((SELECT jsonb_agg(jsonb_build_object('user_id', user_id, 'name', name, 'department_id', department_id,
					'department', department, 'progress_percent', round(progress, 2)) ORDER BY round(progress, 2) DESC, name, user_id)
					FROM users_progress), '[]') END,
			'users_access', {usersAccess}::text,
			'departments', CASE WHEN {deptsAccess}::text = 'ok' THEN
				coalesce((SELECT jsonb_agg(jsonb_build_object('department_id', department_id, 'name', name,
					'progress_percent', round(progress, 2)) ORDER BY round(progress, 2) DESC, name, department_id)
					FROM departments_progress), '[]') END,
			'departments_access', {deptsAccess}::text)::text`,
		"usersAccess", q.arg(usersAccess), "deptsAccess", q.arg(deptsAccess))
}

// kpiTeamScope is the condition on u (users) that keeps the staff of the team
// KPI: the active users of the account for an admin; of their own department
// for a head or a member with a report right (only themselves without a
// department); of department_id when it is given. A department outside that
// scope is answered as a missing one.
func (s *Server) kpiTeamScope(ctx context.Context, q *dashQuery, departmentID *int64) (string, error) {
	p := q.p
	if departmentID != nil {
		missing := missingDepartment(*departmentID)
		if p.Role != RoleAdmin {
			if !p.DepartmentID.Valid || p.DepartmentID.Int64 != *departmentID {
				return "", missing
			}
		} else {
			var id int64
			err := s.db(ctx).GetContext(ctx, &id, `SELECT id FROM departments WHERE account_id = $1 AND id = $2`, p.AccountID, *departmentID)
			if errors.Is(err, sql.ErrNoRows) {
				return "", missing
			}
			if err != nil {
				return "", fmt.Errorf("find department %d: %w", *departmentID, err)
			}
		}
		return "u.active AND u.department_id = " + q.arg(*departmentID), nil
	}
	switch {
	case p.Role == RoleAdmin:
		return "u.active", nil
	case p.DepartmentID.Valid:
		return "u.active AND u.department_id = " + q.arg(p.DepartmentID.Int64), nil
	default:
		return q.sql("u.active AND u.id = {me}"), nil
	}
}

// missingDepartment answers a department_id outside the caller's scope or
// account as a missing department.
func missingDepartment(id int64) error {
	return notFound("query parameter \"department_id\": department %d not found", id)
}

// dayCall, myTasksCall, kpiMyCall and kpiTeamCall are the calls of
// crm_dash_day, crm_dash_tasks, crm_kpi_my and crm_kpi_team (callStmt).
var (
	dayCall = newCallStmt(`SELECT date_from, date_to, NULL::text AS error, value
		FROM crm_dash_day($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`)
	myTasksCall = newCallStmt(`SELECT value FROM crm_dash_tasks($1, $2, $3, $4, $5, $6, $7)`)
	kpiMyCall   = newCallStmt(`SELECT date_from, date_to, NULL::text AS error, value
		FROM crm_kpi_my($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`)
	kpiTeamCall = newCallStmt(`SELECT date_from, date_to, error, value
		FROM crm_kpi_team($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`)
)
