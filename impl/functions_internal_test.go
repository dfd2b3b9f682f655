package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/lib/pq"
)

// nestedPlan is the plan of one statement that a function of db/functions ran,
// as auto_explain reports it (EXPLAIN ANALYZE, FORMAT JSON).
type nestedPlan struct {
	Query string         `json:"Query Text"`
	Plan  map[string]any `json:"Plan"`
}

// explainNested calls a function of db/functions (query, a SELECT of one
// call) on the database at url and returns the plans of the statements it
// ran, caught with auto_explain as notices of the session. Scans of whole
// tables are switched off, as in explainCost: the test's tables are small.
func explainNested(t *testing.T, url, query string, args ...any) []nestedPlan {
	t.Helper()
	connector, err := pq.NewConnector(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans []nestedPlan
	db := sql.OpenDB(pq.ConnectorWithNoticeHandler(connector, func(n *pq.Error) {
		_, text, ok := strings.Cut(n.Message, "plan:\n")
		if !ok {
			return
		}
		var p nestedPlan
		if err := json.Unmarshal([]byte(text), &p); err != nil {
			t.Errorf("auto_explain notice: %v\n%s", err, n.Message)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, p)
	}))
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{
		`LOAD 'auto_explain'`,
		`SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_format = json`,
		`SET auto_explain.log_level = notice`,
		`SET enable_seqscan = off`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var out sql.NullString
	if err := conn.QueryRowContext(ctx, query, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last plan is the call's own.
	var nested []nestedPlan
	for _, p := range plans {
		if strings.TrimSpace(p.Query) != strings.TrimSpace(query) {
			nested = append(nested, p)
		}
	}
	return nested
}

// planTables returns the tables a plan reads.
func planTables(n map[string]any) []string {
	var tables []string
	if rel, ok := n["Relation Name"].(string); ok {
		tables = append(tables, rel)
	}
	if kids, ok := n["Plans"].([]any); ok {
		for _, k := range kids {
			tables = append(tables, planTables(k.(map[string]any))...)
		}
	}
	return tables
}
