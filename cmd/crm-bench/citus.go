package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/crmservice/crm/db"
)

// The Citus comparison (issue 10): the scenarios of citusScenario on a private
// Citus cluster (a coordinator and two workers under .data/citus, as make
// test-citus starts it) beside plain PostgreSQL, both over a data set of
// o.citusCompanies counterparties, in the same run.
const (
	citusDir      = ".data/citus"
	citusWorkers  = 2
	citusDatabase = "crm_bench"
	// plainOfCitusSize is the plain PostgreSQL database of the comparison,
	// beside crm_bench: the same data size as the Citus one.
	plainOfCitusSize = "crm_bench_citus_size"
)

// citusScenario picks the scenarios the comparison runs: the card, the first
// page, a filtered list, the insert with the duplicate check, and the
// dashboards where the benchmark has them.
func citusScenario(name string) bool {
	for _, s := range []string{"first page of 50", "e-mail filter", "counterparty card", "counterparty insert"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return strings.HasPrefix(strings.ToLower(name), "dashboard")
}

// compareCitus runs the comparison and returns its part of the report, or the
// one line that says why it was skipped.
func compareCitus(ctx context.Context, log *slog.Logger, plainURL string, o options, only func(string) bool) string {
	if o.citusCompanies <= 0 {
		return "**Citus:** skipped: -citus-companies is 0."
	}
	path, installed, err := db.CitusLibrary()
	switch {
	case err != nil:
		return "**Citus:** skipped: " + err.Error() + "."
	case !installed:
		return "**Citus:** skipped: the citus extension is not installed (" + path + " is missing)."
	}
	text, err := citusReport(ctx, log, plainURL, o, only)
	if err != nil {
		return "**Citus:** failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + "."
	}
	return text
}

func citusReport(ctx context.Context, log *slog.Logger, plainURL string, o options, only func(string) bool) (string, error) {
	oc := o
	oc.companies, oc.regen = o.citusCompanies, false
	key := fmt.Sprintf("%d/%d", oc.companies, oc.accounts)
	log.Info("starting the Citus cluster", "dir", citusDir)
	cluster, err := db.EnsureLocalCitus(ctx, citusDir, citusWorkers, citusDatabase, log)
	if err != nil {
		return "", err
	}
	citusURL := cluster.URL(citusDatabase)
	// A data set of another size, or one whose generation did not finish, is
	// not dropped table by table on Citus (dropping the schema breaks the
	// extension's metadata): the database is made again.
	if stored, _ := storedKey(ctx, citusURL); stored != key || o.regen {
		if err := db.DropLocalCitusDatabase(ctx, citusDir, citusDatabase); err != nil {
			return "", err
		}
		if cluster, err = db.EnsureLocalCitus(ctx, citusDir, citusWorkers, citusDatabase, log); err != nil {
			return "", err
		}
		citusURL = cluster.URL(citusDatabase)
	}
	plainSmall, err := sibling(ctx, plainURL, plainOfCitusSize)
	if err != nil {
		return "", err
	}
	var results [2][]result
	var sizes [2]int
	for i, u := range []string{plainSmall, citusURL} {
		data, err := ensureData(ctx, log, u, oc)
		if err != nil {
			return "", fmt.Errorf("data set on %s: %w", []string{"PostgreSQL", "Citus"}[i], err)
		}
		if err := removeEarlierInserts(ctx, log, u, data); err != nil {
			return "", fmt.Errorf("data set on %s: %w", []string{"PostgreSQL", "Citus"}[i], err)
		}
		sizes[i] = data.Companies[0]
		sd, err := openSide(ctx, u, data)
		if err != nil {
			return "", err
		}
		var list []scenario
		for _, sc := range scenarios(sd.env) {
			if citusScenario(sc.name) && only(sc.name) {
				list = append(list, sc)
			}
		}
		fmt.Println([]string{"--- Citus comparison: plain PostgreSQL", "--- Citus comparison: Citus"}[i])
		results[i], err = sd.runScenarios(ctx, log, list, oc, false)
		sd.close()
		if err != nil {
			return "", err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Citus** (issue 10): the same scenarios on a Citus 13 cluster (a coordinator and %d workers on this machine, "+
		"started as `make test-citus` starts it) and on plain PostgreSQL, both over a data set of %d counterparties over %d accounts "+
		"(the big account holding %d), smaller than the main one to keep its generation short; one client for the latency, "+
		"%d for the throughput. Target: Citus within 1.5× of plain PostgreSQL, or within 1 ms.\n\n",
		citusWorkers, oc.companies, oc.accounts, sizes[1], oc.clients)
	b.WriteString("| scenario | PostgreSQL p50 | Citus p50 | Citus/PostgreSQL | PostgreSQL req/s | Citus req/s | target | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|\n")
	for i, p := range results[0] {
		if i >= len(results[1]) {
			break
		}
		c := results[1][i]
		verdict := "met"
		if c.http.p50 > p.http.p50*3/2 && c.http.p50-p.http.p50 > 1_000_000 {
			verdict = "MISSED"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.0f | %.0f | %s | %d |\n", p.name, ms(p.http.p50), ms(c.http.p50),
			safeRatio(c.http.p50, p.http.p50), p.httpRPS, c.httpRPS, verdict, p.errors+c.errors)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// storedKey is the size key of the data set in the database at u, "" when none.
func storedKey(ctx context.Context, u string) (string, error) {
	pool, err := db.Open(ctx, u)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	var key string
	err = pool.GetContext(ctx, &key, `SELECT key FROM bench_meta`)
	return key, err
}

// sibling returns the URL of the database name on the server of u, creating
// it when missing.
func sibling(ctx context.Context, u, name string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	parsed.Path = "/postgres"
	admin, err := db.Open(ctx, parsed.String())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var exists bool
	if err := admin.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		return "", err
	}
	if !exists {
		// name is one of this file's constants.
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
			return "", err
		}
	}
	parsed.Path = "/" + name
	return parsed.String(), nil
}
