package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/crmservice/crm/db/dbtest"
)

// TestProxyCountsRoundTrips holds the proxy's count to what lib/pq sends: one
// round trip to prepare a statement, one per execution, one per simple query.
func TestProxyCountsRoundTrips(t *testing.T) {
	url := dbtest.NewURL(t)
	u, err := parseHostPort(url)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProxy(u)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	proxied, err := withHost(url, p.addr())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	before := p.roundTrips()
	st, err := db.PrepareContext(ctx, `SELECT $1::int + 1`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		var n int
		if err := st.QueryRowContext(ctx, i).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("%d: %v", n, err)
		}
	}
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil { // no arguments: a simple query
		t.Fatal(err)
	}
	st.Close()
	if got := p.roundTrips() - before; got < 7 || got > 8 {
		t.Errorf("%d round trips, want 7 (prepare, 5 executions, a query) or 8 (and the close)", got)
	}
}
