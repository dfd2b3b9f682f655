package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
)

// The insert of issue 15 (item 2) is held to "3× today's throughput in the
// same run": today's code is a commit of the repository, built and served
// here beside the current code, over the same database, both driven by wrk
// from outside in alternating rounds.
//
// defaultBaseline is main before issue 15's work began (2026-11-24 07:04,
// issues 13 and 14 merged): nine statements per insert with the duplicate
// check, the token looked up by every request.
const defaultBaseline = "1b38e83"

// baselineSchema holds the view of schema_migrations that the baseline's
// server reads through its search_path: the versions it knows, so that it
// serves the newer schema, whose tables and triggers it writes as the current
// code does (the same rows, derived rows included).
const baselineSchema = "crm_bench_baseline"

// baselineResult is the insert measured on the baseline's server and on the
// current code's, round by round.
type baselineResult struct {
	scenario string
	rev      string // the commit, abbreviated
	old, cur []*wrkResult
	skipped  string
}

// medianRPS is the median of the rounds' throughputs.
func medianRPS(rs []*wrkResult) float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, r.rps)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// compareBaseline builds the server of o.baseline and of the working tree,
// serves both over the database at url, and drives sc with wrk on each in
// turn, o.baselineRounds times. A missing git, commit or wrk makes it a
// skipped result that says why.
func compareBaseline(ctx context.Context, log *slog.Logger, url string, e *benchEnv, sc scenario, o options) *baselineResult {
	res := &baselineResult{rev: o.baseline}
	if o.baseline == "" {
		res.skipped = "-baseline is empty"
		return res
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		res.skipped = "wrk is not installed"
		return res
	}
	sha, err := output(ctx, "", "git", "rev-parse", "--verify", "--quiet", o.baseline+"^{commit}")
	if err != nil {
		res.skipped = fmt.Sprintf("commit %s is not in this repository (a shallow clone?)", o.baseline)
		return res
	}
	dir, err := os.MkdirTemp("", "crm-bench-baseline")
	if err != nil {
		res.skipped = err.Error()
		return res
	}
	defer os.RemoveAll(dir)

	log.Info("building the baseline's server and the current one", "baseline", o.baseline)
	oldSrc := filepath.Join(dir, "src")
	if err := os.Mkdir(oldSrc, 0o755); err != nil {
		res.skipped = err.Error()
		return res
	}
	if _, err := output(ctx, "", "sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", sha, oldSrc); err != nil {
		res.skipped = "git archive: " + err.Error()
		return res
	}
	oldBin, curBin := filepath.Join(dir, "crm-server-"+o.baseline), filepath.Join(dir, "crm-server")
	if _, err := output(ctx, oldSrc, "go", "build", "-o", oldBin, "./cmd/crm-server"); err != nil {
		res.skipped = "build " + o.baseline + ": " + err.Error()
		return res
	}
	if _, err := output(ctx, "", "go", "build", "-o", curBin, "./cmd/crm-server"); err != nil {
		res.skipped = "build the current server: " + err.Error()
		return res
	}
	known, err := lastMigration(filepath.Join(oldSrc, "db", "migrations"))
	if err != nil {
		res.skipped = err.Error()
		return res
	}
	oldURL, err := baselineURL(ctx, e.pool, url, known)
	if err != nil {
		res.skipped = err.Error()
		return res
	}
	oldBase, stopOld, err := startServer(ctx, oldBin, oldURL, filepath.Join(dir, "old.log"))
	if err != nil {
		res.skipped = fmt.Sprintf("serve %s: %v", o.baseline, err)
		return res
	}
	defer stopOld()
	curBase, stopCur, err := startServer(ctx, curBin, url, filepath.Join(dir, "current.log"))
	if err != nil {
		res.skipped = fmt.Sprintf("serve the current code: %v", err)
		return res
	}
	defer stopCur()

	on := func(base string) *benchEnv {
		c := *e
		c.base = base
		return &c
	}
	for round := range o.baselineRounds {
		// Alternate which goes first, so that a drift of the machine's load
		// or of the tables' size within a round weighs on both alike.
		sides := []struct {
			base string
			into *[]*wrkResult
		}{{oldBase, &res.old}, {curBase, &res.cur}}
		if round%2 == 1 {
			slices.Reverse(sides)
		}
		for _, s := range sides {
			r := runWrk(ctx, on(s.base), sc, o)
			if r.skipped != "" {
				res.skipped = r.skipped
				return res
			}
			*s.into = append(*s.into, r)
		}
		log.Info("baseline round", "round", round+1, "of", o.baselineRounds,
			o.baseline, fmt.Sprintf("%.0f/s", res.old[round].rps), "current", fmt.Sprintf("%.0f/s", res.cur[round].rps))
	}
	return res
}

// output runs a command (in dir when not empty) and returns its standard
// output; a failure carries the first lines of what it printed.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, firstLines(errOut.Bytes()))
	}
	return strings.TrimSpace(out.String()), nil
}

// lastMigration is the highest version among the migration files in dir.
func lastMigration(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	last := 0
	for _, en := range entries {
		digits, _, ok := strings.Cut(en.Name(), "_")
		if v, err := strconv.Atoi(digits); ok && err == nil {
			last = max(last, v)
		}
	}
	if last == 0 {
		return 0, fmt.Errorf("no migrations in %s", dir)
	}
	return last, nil
}

// baselineURL makes the view through which a server that knows migrations up
// to known accepts this database, and returns the URL whose sessions see it.
func baselineURL(ctx context.Context, pool *sqlx.DB, url string, known int) (string, error) {
	for _, stmt := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + baselineSchema,
		`CREATE OR REPLACE VIEW ` + baselineSchema + `.schema_migrations AS
			SELECT * FROM public.schema_migrations WHERE version <= ` + strconv.Itoa(known),
	} {
		if _, err := pool.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("the baseline's view of the migrations: %w", err)
		}
	}
	return withParam(url, "search_path", baselineSchema+",public")
}

// startServer runs bin serve over the database at url on a free loopback
// port, with no rate limits and no workers, and waits until it is healthy.
// Its output goes to logFile.
func startServer(ctx context.Context, bin, url, logFile string) (base string, stop func(), err error) {
	return startServerEnv(ctx, bin, url, logFile, nil)
}

// startServerEnv is startServer with more variables in the server's
// environment.
func startServerEnv(ctx context.Context, bin, url, logFile string, extraEnv []string) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logOut, err := os.Create(logFile)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--rate-limit", "0", "--auth-failure-limit", "0")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRM_SECRET_KEY=") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, "DATABASE_URL="+url, "CRM_MAIL=off", "CRM_WEBHOOKS=off", "METRICS_ADDR=off"), extraEnv...)
	cmd.Stdout, cmd.Stderr = logOut, logOut
	if err := cmd.Start(); err != nil {
		logOut.Close()
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logOut.Close(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	base = "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile)
			return "", nil, fmt.Errorf("it exited: %s", lastLines(b))
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("not healthy within 60 s")
		}
	}
}

func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " / ")
}

// render is the report's paragraph and table of the comparison.
func (r *baselineResult) render() string {
	var b strings.Builder
	rev := r.rev
	if rev == "" {
		rev = "an earlier commit"
	}
	fmt.Fprintf(&b, "**%s against the code of %s** (before issue 15): ", upperFirst(r.scenario), rev)
	if r.skipped != "" {
		fmt.Fprintf(&b, "skipped: %s.\n\n", r.skipped)
		return b.String()
	}
	fmt.Fprintf(&b, "both servers built from their sources and run as processes over this database "+
		"(the baseline's sessions see the migrations it knows, so it writes the same tables and triggers), "+
		"each driven by wrk in turn, %d rounds:\n\n", len(r.old))
	b.WriteString("| round | " + r.rev + " req/s | p50 | p99 | stored | current req/s | p50 | p99 | stored |\n|---:|---:|---:|---:|---|---:|---:|---:|---|\n")
	stored := func(w *wrkResult) string {
		return fmt.Sprintf("%d of %d requests, %d e-mails, %d phones", w.stored[0], w.requests, w.stored[1], w.stored[2])
	}
	for i := range r.old {
		o, c := r.old[i], r.cur[i]
		fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %s | %.0f | %s | %s | %s |\n", i+1,
			o.rps, ms(o.p50), ms(o.p99), stored(o), c.rps, ms(c.p50), ms(c.p99), stored(c))
	}
	old, cur := medianRPS(r.old), medianRPS(r.cur)
	fmt.Fprintf(&b, "\nMedian of the rounds: %s %.0f req/s, current %.0f req/s: **%.2f×** (the target is 3×).\n\n", r.rev, old, cur, cur/old)
	return b.String()
}
