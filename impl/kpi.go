package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KPI plans are written by admin commands (the interface has no operation for
// them) and read by GET /dashboard/kpi/my and /dashboard/kpi/team. Like the other
// admin operations, they do not write the journal.

// kpiMetricNames are the names an item of each metric gets when none is given.
var kpiMetricNames = map[string]string{
	"companies_added": "New counterparties",
	"tasks_done":      "Tasks done",
	"deals_created":   "New deals",
	"deal_sum":        "Deal volume",
	"invoices_issued": "Invoices issued",
	"invoice_sum":     "Invoiced amount",
	"income":          "Income",
}

// KPIMetrics returns what a KPI plan item can measure, in the dashboards' order.
func KPIMetrics() []string { return slices.Clone(kpiMetrics) }

// planValue is a positive decimal with at most two decimals (kpi_plan_items.plan_value).
var planValue = regexp.MustCompile(`^[0-9]{1,16}(\.[0-9]{1,2})?$`)

// KPIItemInput describes the item of one metric in a user's KPI plan for a month.
type KPIItemInput struct {
	UserID int64
	Month  time.Time // any day of the month
	Metric string    // companies_added, tasks_done, deals_created, deal_sum, invoices_issued, invoice_sum or income
	Plan   string    // the monthly plan value, a decimal greater than 0
	Name   string    // "" keeps the name of an existing item, or gives a new one the metric's name
}

// SetKPIItem sets the item of a metric in a user's KPI plan for a month,
// creating the plan when the user has none for that month, and returns the
// item's id.
func SetKPIItem(ctx context.Context, db *sqlx.DB, in KPIItemInput) (int64, error) {
	if !slices.Contains(kpiMetrics, in.Metric) {
		return 0, badRequest("metric %q is not one of %s", in.Metric, strings.Join(kpiMetrics, ", "))
	}
	if !planValue.MatchString(in.Plan) || strings.Trim(in.Plan, "0.") == "" {
		return 0, badRequest("plan %q is not a decimal greater than 0 with at most two decimals", in.Plan)
	}
	name := in.Name
	if name == "" {
		name = kpiMetricNames[in.Metric]
	}
	u, err := findUser(ctx, db, in.UserID)
	if err != nil {
		return 0, err
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("set KPI item: %w", err)
	}
	defer tx.Rollback()
	// DO UPDATE rather than DO NOTHING, so that RETURNING gives the plan a
	// concurrent set created first.
	var planID int64
	err = tx.GetContext(ctx, &planID, `
		INSERT INTO kpi_plans (account_id, user_id, month) VALUES ($1, $2, $3::date)
		ON CONFLICT (account_id, user_id, month) DO UPDATE SET month = EXCLUDED.month
		RETURNING id`, u.AccountID, in.UserID, monthStart(in.Month))
	if err != nil {
		return 0, adminDBError("set KPI plan", err, map[string]*Error{"kpi_plans_user_fk": notFound("no user %d", in.UserID)})
	}
	var id int64
	err = tx.GetContext(ctx, &id, `
		INSERT INTO kpi_plan_items (account_id, plan_id, name, metric, plan_value) VALUES ($1, $2, $3, $4, $5::numeric)
		ON CONFLICT (account_id, plan_id, metric) DO UPDATE
			SET plan_value = EXCLUDED.plan_value, name = CASE WHEN $6 THEN EXCLUDED.name ELSE kpi_plan_items.name END
		RETURNING id`, u.AccountID, planID, name, in.Metric, in.Plan, in.Name != "")
	if err != nil {
		return 0, adminDBError("set KPI item", err, nil)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("set KPI item: %w", err)
	}
	return id, nil
}

// monthStart is the first day of t's month as a date.
func monthStart(t time.Time) string {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// RemoveKPIItem removes the item of a metric from a user's KPI plan for a
// month; a plan left without items is removed as well.
func RemoveKPIItem(ctx context.Context, db *sqlx.DB, userID int64, month time.Time, metric string) error {
	first := monthStart(month)
	u, err := findUser(ctx, db, userID)
	if err != nil {
		return err
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("remove KPI item: %w", err)
	}
	defer tx.Rollback()
	var planID int64
	err = tx.GetContext(ctx, &planID, `
		DELETE FROM kpi_plan_items i
		 WHERE i.account_id = $1 AND i.metric = $4
		   AND i.plan_id = (SELECT p.id FROM kpi_plans p WHERE p.account_id = $1 AND p.user_id = $2 AND p.month = $3::date)
		RETURNING i.plan_id`, u.AccountID, userID, first, metric)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("user %d has no %s item in the plan for %s", userID, metric, first[:7])
	}
	if err != nil {
		return adminDBError("remove KPI item", err, nil)
	}
	if _, err := tx.ExecContext(ctx, `
		DELETE FROM kpi_plans p WHERE p.account_id = $1 AND p.id = $2
		   AND NOT EXISTS (SELECT FROM kpi_plan_items i WHERE i.account_id = $1 AND i.plan_id = $2)`,
		u.AccountID, planID); err != nil {
		return adminDBError("remove the empty KPI plan", err, nil)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("remove KPI item: %w", err)
	}
	return nil
}

// KPIItem is one item of a KPI plan.
type KPIItem struct {
	Month   time.Time `db:"month"` // the first day of the plan's month
	ID      int64     `db:"id"`
	Metric  string    `db:"metric"`
	Measure string    `db:"measure"` // count or amount
	Plan    string    `db:"plan_value"`
	Name    string    `db:"name"`
}

// ListKPIItems returns the items of a user's KPI plans, latest month first,
// the metrics of a month in the dashboards' order.
func ListKPIItems(ctx context.Context, db *sqlx.DB, userID int64) ([]KPIItem, error) {
	u, err := findUser(ctx, db, userID)
	if err != nil {
		return nil, err
	}
	items := []KPIItem{}
	err = db.SelectContext(ctx, &items, `
		SELECT p.month, i.id, i.metric, i.measure, i.plan_value::text AS plan_value, i.name
		  FROM kpi_plans p
		  JOIN kpi_plan_items i ON i.account_id = $1 AND i.plan_id = p.id
		 WHERE p.account_id = $1 AND p.user_id = $2
		 ORDER BY p.month DESC, array_position($3::text[], i.metric)`, u.AccountID, userID, pq.Array(kpiMetrics))
	if err != nil {
		return nil, adminDBError("list KPI items", err, nil)
	}
	return items, nil
}
