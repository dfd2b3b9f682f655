package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	args := []string{"-database", dbtest.NewURL(t), "-companies", "400", "-accounts", "2", "-clients", "2",
		"-duration", "100ms", "-warmup", "10ms", "-report", report, "-citus-companies", "0"}
	if err := run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), args); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept\n", "## Dashboards\n\nkept too", "| first page of 50 counterparties, exact total |",
		"| counterparty insert, 2 e-mails and 2 phones, duplicate check |", "**Citus:** skipped: -citus-companies is 0.",
		"**Memory:**", "what each side stored** (counted in the database): over HTTP "} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(text), "old\n") {
		t.Error("the old section was not replaced")
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
