// Command crm-conformance checks a running deployment of the service against its
// contract: it replays the documented cases of conformance/cases (built into the
// binary, as is openapi.yaml) and validates every reply against the contract.
//
//	crm-conformance -base-url https://crm.example.com -token crm_…
//
// Before the first case it finds through the API what the cases need (the token
// owner, a mail account of theirs, sample records), asks which optional features
// the server has switched off, and says, once, what it could not find and which
// flag sets it; the cases that need it are skipped, saying so. It prints one line
// per case and a summary, the records it created and what it removed again.
//
// Exit status: 0 when every case sent passed, 1 when a case failed (or none was
// sent, or the run was interrupted, or -strict and a case was skipped), 2 for a
// usage or setup error (a bad flag, a server that does not answer or refuses the
// token, an output file that cannot be written).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/crmservice/crm/conformance"
	"github.com/crmservice/crm/gen"
)

// The exit statuses.
const (
	exitPass  = 0
	exitFail  = 1
	exitSetup = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the flags of a run.
type options struct {
	baseURLs     []string
	token        string
	memberToken  string
	contractPath string
	casesDir     string
	filter       string
	verbose      bool
	readOnly     bool
	keep         bool
	strict       bool
	junitPath    string
	jsonPath     string
	vars         map[string]string
}

func run(args []string, stdout, stderr io.Writer) int {
	o := options{vars: map[string]string{}}
	fl := flag.NewFlagSet("crm-conformance", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Func("base-url", "base URL of the server under test, such as http://localhost:8080 (required; repeat it for several servers of one deployment, which then get the cases in turn)", func(s string) error {
		o.baseURLs = append(o.baseURLs, s)
		return nil
	})
	fl.StringVar(&o.token, "token", "", "bearer token of a user of the account under test, best an admin with both KPI report rights (default $CRM_TOKEN)")
	fl.StringVar(&o.memberToken, "member-token", "", "token of another user of the same account who is not an admin and has no KPI report rights, for the cases of access levels (default $CRM_MEMBER_TOKEN; without it they are skipped)")
	fl.BoolVar(&o.readOnly, "read-only", false, "write nothing: skip, saying so, every case whose operation writes")
	fl.BoolVar(&o.keep, "keep", false, "keep the records the run created (by default it deletes those the API can delete: counterparties, webhooks, additional fields, ready filters)")
	fl.StringVar(&o.junitPath, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&o.jsonPath, "json", "", "write a JSON summary to this file")
	fl.BoolVar(&o.strict, "strict", false, "count skipped cases as failures (exit status 1 when any case is skipped)")
	fl.StringVar(&o.filter, "run", "", "run only the cases whose suite/case name matches this regular expression (and the cases they need)")
	fl.BoolVar(&o.verbose, "v", false, "print every exchange, not only the failed ones")
	fl.StringVar(&o.contractPath, "contract", "", "openapi.yaml to check the replies against (default: the copy built into this binary)")
	fl.StringVar(&o.casesDir, "cases", "", "directory of case files (default: the cases built into this binary)")
	fl.Func("var", "set a variable of the cases as name=value (repeatable), such as -var user_id=5; a variable set so is not looked for through the API", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return errors.New("want name=value")
		}
		o.vars[name] = value
		return nil
	})
	fl.Usage = func() {
		fmt.Fprint(stderr, `usage: crm-conformance -base-url URL -token TOKEN [-member-token TOKEN] [-read-only] [-junit FILE] [-json FILE] [flags]

Checks a running server against its contract: replays the documented cases and
validates every reply against openapi.yaml. Exit status 0: every case sent passed;
1: a case failed (or none was sent, or -strict and one was skipped); 2: a usage or
setup error.

`)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		return exitSetup
	}
	if o.token == "" {
		o.token = os.Getenv("CRM_TOKEN")
	}
	if o.memberToken == "" {
		o.memberToken = os.Getenv("CRM_MEMBER_TOKEN")
	}
	if o.memberToken != "" {
		o.vars["member_token"] = o.memberToken
	}
	if len(o.baseURLs) == 0 || o.token == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "crm-conformance: -base-url and -token (or $CRM_TOKEN) are required")
		fl.Usage()
		return exitSetup
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "crm-conformance: "+format+"\n", args...)
		return exitSetup
	}

	contract, err := loadContract(o.contractPath)
	if err != nil {
		return fail("%v", err)
	}
	caseFiles := conformance.EmbeddedCases()
	if o.casesDir != "" {
		caseFiles = os.DirFS(o.casesDir)
	}
	suites, err := conformance.LoadCases(caseFiles)
	if err != nil {
		return fail("load the cases: %v", err)
	}
	if o.filter != "" {
		re, err := regexp.Compile(o.filter)
		if err != nil {
			return fail("-run: %v", err)
		}
		suites = conformance.Select(suites, re)
	}
	// The output files are created before the run, so that a bad path is a
	// usage error at once, not a lost report at the end.
	outputs := map[string]*os.File{}
	for _, path := range []string{o.junitPath, o.jsonPath} {
		if path == "" {
			continue
		}
		f, err := os.Create(path)
		if err != nil {
			return fail("%v", err)
		}
		defer f.Close()
		outputs[path] = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner := &conformance.Runner{
		BaseURLs: o.baseURLs,
		Token:    o.token,
		Vars:     o.vars,
		Contract: contract,
		ReadOnly: o.readOnly,
		Progress: func(res conformance.Result) { printResult(stdout, res, o.verbose) },
	}
	setup, err := runner.Prepare(ctx, suites)
	if err != nil {
		return fail("%v", err)
	}
	printSetup(stdout, &o, runner, setup, suites)

	report := runner.Run(ctx, suites)
	stop() // a second Ctrl-C stops the cleanup too
	var cleanupProblems []string
	if !o.keep && !o.readOnly {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cleanupProblems = runner.Cleanup(cctx, &report)
		cancel()
	}
	if report.Interrupted {
		fmt.Fprintln(stdout, "interrupted")
	}
	printWrites(stdout, &report, o.keep, cleanupProblems)

	code := exitPass
	sent := report.Passed() + report.Failed()
	switch {
	case report.Failed() > 0 || report.Interrupted:
		code = exitFail
	case sent == 0:
		fmt.Fprintln(stdout, "no case was sent")
		code = exitFail
	case o.strict && report.Skipped() > 0:
		fmt.Fprintln(stdout, "-strict: skipped cases count as failures")
		code = exitFail
	}
	fmt.Fprintf(stdout, "\n%d passed, %d failed, %d skipped, %d cases in %s (run_id %s)\n",
		report.Passed(), report.Failed(), report.Skipped(), len(report.Results), report.Duration.Round(time.Millisecond), report.RunID)

	if f := outputs[o.junitPath]; f != nil {
		if err := writeJUnit(f, &report); err != nil {
			return fail("-junit: %v", err)
		}
	}
	if f := outputs[o.jsonPath]; f != nil {
		if err := writeSummary(f, &o, setup, &report, code); err != nil {
			return fail("-json: %v", err)
		}
	}
	return code
}

// loadContract reads the contract from path, or uses the copy embedded in package gen.
func loadContract(path string) (*conformance.Contract, error) {
	if path != "" {
		return conformance.LoadContract(path)
	}
	spec, err := gen.GetSpecJSON()
	if err != nil {
		return nil, fmt.Errorf("read the embedded contract: %w", err)
	}
	return conformance.ParseContract(spec)
}

// printSetup says, before the first case, what Prepare found, what it could
// not find (and which flag sets it), which features are off and whether the
// run writes.
func printSetup(w io.Writer, o *options, r *conformance.Runner, s *conformance.Setup, suites []conformance.Suite) {
	fmt.Fprintf(w, "crm-conformance: %s, run_id %s\n", strings.Join(o.baseURLs, ", "), r.Vars["run_id"])
	if len(s.Found) > 0 {
		fmt.Fprintln(w, "found through the API:")
		for _, f := range s.Found {
			fmt.Fprintf(w, "  %s=%s (%s)\n", f.Name, f.Value, f.Source)
		}
	}
	if len(s.Unavailable) > 0 {
		fmt.Fprintln(w, "not found, so the cases that need them are skipped:")
		for _, name := range sortedKeys(s.Unavailable) {
			fmt.Fprintf(w, "  %s: %s\n", name, s.Unavailable[name])
		}
	}
	if len(s.Off) > 0 {
		fmt.Fprintln(w, "switched off on this server, so their cases are skipped:")
		for _, name := range sortedKeys(s.Off) {
			fmt.Fprintf(w, "  %s: %s\n", name, s.Off[name])
		}
	}
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if o.readOnly {
		fmt.Fprintln(w, "read-only: the cases whose operation writes are skipped; nothing is written")
	} else if ops := creating(r, suites); len(ops) > 0 {
		fmt.Fprintln(w, "this run writes into the token's account (-read-only writes nothing):")
		fmt.Fprintf(w, "  it creates records with %s\n", strings.Join(ops, ", "))
		fmt.Fprintln(w, "  (their names and e-mails carry the run_id) and changes some of them; every write is in the journal.")
		if slices.Contains(ops, "POST /document/goods/insert") {
			fmt.Fprintln(w, "  It adds a goods position to the sample document.")
		}
		fmt.Fprintln(w, "  The end of the run lists what it wrote.")
		if !o.keep {
			fmt.Fprintln(w, "  Then it deletes what the API can delete (-keep keeps it).")
		}
	}
	fmt.Fprintln(w)
}

// creating lists the operations that create records among the cases of
// suites, but for those of a feature switched off.
func creating(r *conformance.Runner, suites []conformance.Suite) []string {
	var ops []string
	for _, s := range suites {
		for _, cs := range s.Cases {
			op := cs.Request.Method + " " + cs.Request.Path
			if _, off := r.Off[cs.Feature]; (off && cs.Feature != "") || cs.Expect.Status != conformance.StatusSuccess {
				continue
			}
			if (strings.HasSuffix(cs.Request.Path, "/insert") || cs.Request.Path == "/mail/send") &&
				r.Contract.Writes(cs.Request.Method, cs.Target()) && !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// printWrites lists what the run wrote: the records it created, by operation,
// and whether they were removed again.
func printWrites(w io.Writer, rep *conformance.Report, keep bool, problems []string) {
	if len(rep.Writes) == 0 {
		return
	}
	type group struct {
		ids, removed, samples []string
		n                     int
	}
	var order []string
	groups := map[string]*group{}
	for _, wr := range rep.Writes {
		g := groups[wr.Operation]
		if g == nil {
			g = &group{}
			groups[wr.Operation] = g
			order = append(order, wr.Operation)
		}
		g.n++
		if wr.Sample {
			g.samples = append(g.samples, wr.ID)
			continue
		}
		if wr.ID != "" {
			g.ids = append(g.ids, wr.ID)
			if wr.Removed != "" {
				g.removed = append(g.removed, wr.ID)
			}
		}
	}
	fmt.Fprintln(w, "\nwritten into the account by this run:")
	for _, op := range order {
		g := groups[op]
		var notes []string
		if len(g.ids) > 0 {
			note := "ids " + strings.Join(g.ids, ", ")
			switch {
			case len(g.removed) == len(g.ids):
				note += ", all removed again"
			case len(g.removed) > 0:
				note += ", removed again: " + strings.Join(g.removed, ", ")
			}
			notes = append(notes, note)
		}
		if len(g.samples) > 0 {
			note := "samples made before the cases and kept for later runs"
			if ids := slices.DeleteFunc(slices.Clone(g.samples), func(s string) bool { return s == "" }); len(ids) > 0 {
				note += ": " + strings.Join(ids, ", ")
			}
			notes = append(notes, note)
		}
		line := fmt.Sprintf("  %s: %d", op, g.n)
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	kept := rep.Kept()
	if len(kept) > 0 && !keep {
		fmt.Fprintln(w, "  the API cannot delete the other records; they stay, named with the run_id (counterparties are deleted softly: kept in the database, gone from the API)")
	}
	for _, p := range problems {
		fmt.Fprintf(w, "  not removed: %s\n", p)
	}
}

// printResult prints the line of one case and, when it failed or verbose is
// set, the exchange and the problems under it.
func printResult(w io.Writer, res conformance.Result, verbose bool) {
	if res.Skipped {
		fmt.Fprintf(w, "skip %s: %s\n", res.Name(), res.SkipReason)
		return
	}
	mark := "ok  "
	if !res.Pass {
		mark = "FAIL"
	}
	fmt.Fprintf(w, "%s %s (%s)\n", mark, res.Name(), res.Duration.Round(100*time.Microsecond))
	if res.Pass && !verbose {
		return
	}
	if verbose && res.Description != "" {
		fmt.Fprintf(w, "     %s\n", res.Description)
	}
	if res.Request != "" {
		fmt.Fprintf(w, "     request: %s\n", res.Request)
		if res.RequestBody != "" {
			fmt.Fprintf(w, "     request body: %s\n", oneLine(res.RequestBody))
		}
	}
	if res.HTTPStatus != 0 {
		fmt.Fprintf(w, "     reply: HTTP %d %s\n", res.HTTPStatus, oneLine(res.Body))
	}
	if res.Retries > 0 {
		fmt.Fprintf(w, "     retried %d times after HTTP 429\n", res.Retries)
	}
	if res.Unchecked != "" && verbose {
		fmt.Fprintf(w, "     not checked against an operation: %s\n", res.Unchecked)
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "     - %s\n", p)
	}
}

func oneLine(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
