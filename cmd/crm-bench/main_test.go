package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestBenchSmall runs the whole benchmark on a tiny data set, so that `make
// bench` keeps working; the figures mean nothing here.
func TestBenchSmall(t *testing.T) {
	// Needs a database of its own: the benchmark empties and fills a database of its own.
	dbtest.RequireOwnDatabase(t)
	report := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(report, []byte("# Benchmarks\n\nkept\n\n<!-- crm-bench:begin -->\nold\n<!-- crm-bench:end -->\n\n## Dashboards\n\nkept too\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := dbtest.NewURL(t)
	args := []string{"-database", url, "-companies", "400", "-accounts", "2", "-clients", "2",
		"-duration", "100ms", "-warmup", "10ms", "-report", report, "-citus-companies", "0", "-baseline", ""}
	if err := run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), args); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept\n", "## Dashboards\n\nkept too", "| first page of 50 counterparties, exact total |",
		"| counterparty insert, 2 e-mails and 2 phones, duplicate check |", "**Citus:** skipped: -citus-companies is 0.",
		"**Memory:**", "what each side stored** (counted in the database): over HTTP ",
		"| counterparty card, MAX_IN_FLIGHT=", "against the code of an earlier commit** (before issue 15): skipped: -baseline is empty."} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(text), "old\n") {
		t.Error("the old section was not replaced")
	}

	// The next run begins by removing what the insert scenario wrote: the
	// big account is back to its generated counterparties, names and items.
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := plan(2, 400)
	var account int64
	if err := pool.Get(&account, `SELECT min(id) FROM accounts`); err != nil {
		t.Fatal(err)
	}
	count := func(q string) (n int) {
		t.Helper()
		if err := pool.Get(&n, q, account); err != nil {
			t.Fatal(err)
		}
		return n
	}
	inserted := count(`SELECT count(*) FROM companies WHERE account_id = $1 AND name LIKE 'Bench insert %'`)
	if inserted == 0 {
		t.Fatal("the insert scenario stored nothing")
	}
	removeBatch = 7 // several batches
	defer func() { removeBatch = 1000 }()
	if n, err := removeInserted(context.Background(), pool, account); err != nil || n != int64(inserted) {
		t.Fatalf("removed %d, %v; want %d", n, err, inserted)
	}
	for q, want := range map[string]int{
		`SELECT count(*) FROM companies WHERE account_id = $1`:                                                                                         d.Companies[0],
		`SELECT count(*) FROM company_names WHERE account_id = $1`:                                                                                     d.Companies[0],
		`SELECT count(*) FROM emails WHERE account_id = $1 AND company_id IS NOT NULL AND email LIKE '%@new.example'`:                                  0,
		`SELECT count(*) FROM phones p WHERE account_id = $1 AND NOT EXISTS (SELECT FROM companies c WHERE c.account_id = $1 AND c.id = p.company_id)`: 0,
	} {
		if n := count(q); n != want {
			t.Errorf("%s: %d, want %d", q, n, want)
		}
	}
	// The SQL side of the insert replays the same work: each counterparty it
	// stored has its two e-mails and two phones, as those stored over HTTP.
	if strings.Contains(string(text), "NOT each with 2 e-mails and 2 phones") {
		t.Error("a side of the insert did not store what the request asks for")
	}
	// Every scenario answered without an error (the last column).
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| scenario") && !strings.HasSuffix(line, "| 0 |") {
			t.Errorf("a scenario had errors: %s", line)
		}
	}
}

// TestEnvelopeStatus: the client's check of a reply finds the status wherever
// it stands, and refuses what is not an envelope.
func TestEnvelopeStatus(t *testing.T) {
	for _, c := range []struct {
		reply, status string
		ok            bool
	}{
		{`{"code":"0","error":"","page":1,"pages":1,"rows":1,"status":"success","value":"[{\"id\":1}]"}`, "success", true},
		{`{"value":"[{\"id\":1}]","rows":1,"status":"success"}`, "success", true},
		{`{"code":"400","error":"bad","status":"error","value":""}`, "error", true},
		{`{"code":"0","value":""}`, "", false},
		{`[1,2]`, "", false},
		{`not json`, "", false},
		{`{"code":`, "", false},
	} {
		status, err := envelopeStatus([]byte(c.reply))
		if status != c.status || (err == nil) != c.ok {
			t.Errorf("%s: %q, %v; want %q, ok %v", c.reply, status, err, c.status, c.ok)
		}
	}
}

// TestPairedRatio: the median of the rounds' own ratios, which a slow round
// of both sides does not move, unlike the ratio of the medians.
func TestPairedRatio(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{100, 50, 100}, []float64{100, 50, 100}, 1},   // the ratio of the medians: 1 too
		{[]float64{96, 48, 110}, []float64{100, 50, 100}, 0.96}, // medians: 96/100
		{[]float64{100, 60, 70}, []float64{100, 60, 80}, 1},     // medians: 70/80 = 0.875
		{[]float64{90, 100}, []float64{100, 0}, 0.9},            // a round without b's figure is left out
		{nil, []float64{1}, 0},
	} {
		if got := pairedRatio(c.a, c.b); got != c.want {
			t.Errorf("pairedRatio(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
