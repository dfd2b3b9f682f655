// Command crm-conformance replays the documented cases of conformance/cases
// against a running server and validates every reply against openapi.yaml.
//
//	crm-conformance -base-url http://localhost:8080 -token crm_… -var user_id=5
//
// It prints one line per case and a summary, and exits with 1 when a case fails.
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
	"strings"
	"time"

	"github.com/crmservice/crm/conformance"
	"github.com/crmservice/crm/gen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("crm-conformance", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var baseURLs []string
	fl.Func("base-url", "base URL of the server under test, such as http://localhost:8080 (required; repeat it for several servers of one deployment, which then get the cases in turn)", func(s string) error {
		baseURLs = append(baseURLs, s)
		return nil
	})
	token := fl.String("token", "", "bearer token of a user of the account under test (default $CRM_TOKEN)")
	contractPath := fl.String("contract", "", "openapi.yaml to check the replies against (default: the copy built into this binary)")
	casesDir := fl.String("cases", "", "directory of case files (default: the cases built into this binary)")
	filter := fl.String("run", "", "run only the cases whose suite/case name matches this regular expression (and the cases they need)")
	verbose := fl.Bool("v", false, "print every exchange, not only the failed ones")
	vars := map[string]string{}
	fl.Func("var", "set a variable of the cases as name=value (repeatable), such as -var user_id=5", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return errors.New("want name=value")
		}
		vars[name] = value
		return nil
	})
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: crm-conformance -base-url URL [-token TOKEN] [-var name=value]... [-run REGEXP] [-v]")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *token == "" {
		*token = os.Getenv("CRM_TOKEN")
	}
	if len(baseURLs) == 0 || *token == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "crm-conformance: -base-url and -token (or $CRM_TOKEN) are required")
		fl.Usage()
		return 2
	}

	contract, err := loadContract(*contractPath)
	if err != nil {
		fmt.Fprintf(stderr, "crm-conformance: %v\n", err)
		return 2
	}
	caseFiles := conformance.EmbeddedCases()
	if *casesDir != "" {
		caseFiles = os.DirFS(*casesDir)
	}
	suites, err := conformance.LoadCases(caseFiles)
	if err != nil {
		fmt.Fprintf(stderr, "crm-conformance: load the cases: %v\n", err)
		return 2
	}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintf(stderr, "crm-conformance: -run: %v\n", err)
			return 2
		}
		suites = conformance.Select(suites, re)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner := &conformance.Runner{
		BaseURLs: baseURLs,
		Token:    *token,
		Vars:     vars,
		Contract: contract,
		Progress: func(res conformance.Result) { printResult(stdout, res, *verbose) },
	}
	report := runner.Run(ctx, suites)
	if report.Interrupted {
		fmt.Fprintln(stdout, "interrupted")
	}
	fmt.Fprintf(stdout, "\n%d passed, %d failed, %d cases in %s (run_id %s)\n",
		report.Passed(), report.Failed(), len(report.Results), report.Duration.Round(time.Millisecond), report.RunID)
	if report.Failed() > 0 || len(report.Results) == 0 || report.Interrupted {
		return 1
	}
	return 0
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

// printResult prints the line of one case and, when it failed or verbose is
// set, the exchange and the problems under it.
func printResult(w io.Writer, res conformance.Result, verbose bool) {
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
