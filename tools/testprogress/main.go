// Command testprogress renders the output of `go test -json` for make test:
// a line when each package ends, while packages run a line every few seconds
// with what they have passed so far and which tests are running, the output
// of each failed test as soon as it fails, a line per reason why tests of a
// package skipped (the first line the test logged), and a summary line at the
// end.
//
//	go test -json ./... | go run ./tools/testprogress [-every 10s] [-title "make test"]
//	go run ./tools/testprogress -run 'go test -json -race ./impl/...' -run 'go test -json ./db/...'
//
// With -run it runs the commands at once and merges what they report, so
// that one suite runs while another is still being built; a label before a
// command, "(1/2) CRM_TEST_SHARD=1/2 go test …", names its share of a package
// that several commands test.
//
// It exits with status 1 when a test or a build failed, and 2 when its input
// was not what go test -json writes.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	every := flag.Duration("every", 10*time.Second, "how often to report the packages still running (0: never)")
	title := flag.String("title", "make test", "what the summary line calls the run")
	module := flag.String("module", "github.com/crmservice/crm/", "prefix left out of package names")
	var commands []string
	flag.Func("run", "a command line (bash) whose output is go test -json; several run at once, each given by a -run of its own (none: read standard input); "+
		"a command that starts with a label in parentheses, \"(1/2) go test …\", has it added to its packages' names",
		func(c string) error { commands = append(commands, c); return nil })
	expect := flag.String("packages", "", "the packages the run will test, separated by blanks: the report names those not started yet (being built)")
	flag.Parse()
	r := newReport(os.Stdout, *title, *module, time.Now)
	r.expected = strings.Fields(*expect)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if *every > 0 {
		wg.Go(func() {
			tick := time.NewTicker(*every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					r.heartbeat()
				}
			}
		})
	}
	var err error
	failed := false
	if len(commands) == 0 {
		err = r.read(os.Stdin)
	} else {
		failed, err = r.runAll(commands)
	}
	close(stop)
	wg.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	if !r.finish() || failed {
		os.Exit(1)
	}
}

// runAll runs the commands at once, each through bash with its standard
// output and error read as go test -json, and waits for them all; failed
// tells whether one of them ended with a status other than 0, which is
// reported too (a failing test does that, but so does a go test that could
// not start).
func (r *report) runAll(commands []string) (failed bool, err error) {
	var wg sync.WaitGroup
	var anyFailed atomic.Bool
	errs := make([]error, len(commands))
	for i, line := range commands {
		label := ""
		if strings.HasPrefix(line, "(") {
			if end := strings.Index(line, ") "); end > 0 {
				label, line = line[:end+1], line[end+2:]
			}
		}
		cmd := exec.Command("bash", "-c", line)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return true, err
		}
		cmd.Stderr = cmd.Stdout // one stream: go's own messages pass through
		if err := cmd.Start(); err != nil {
			return true, fmt.Errorf("start %q: %w", line, err)
		}
		wg.Go(func() {
			if errs[i] = r.readAs(out, label); errs[i] != nil {
				_, _ = io.Copy(io.Discard, out) // let it end
			}
			if err := cmd.Wait(); err != nil {
				anyFailed.Store(true)
				r.mu.Lock()
				shown := line
				if len(shown) > 70 {
					shown = shown[:70] + "…"
				}
				r.ended = append(r.ended, fmt.Sprintf("%s ended with %v", shown, err))
				r.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return anyFailed.Load(), errors.Join(errs...)
}

// event is one line of go test -json (cmd/test2json's TestEvent, and the
// build events of go build -json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// pkg is what the report knows of one package.
type pkg struct {
	name                    string
	start                   time.Time
	passed, failed, skipped int
	running                 []string                    // top-level tests running now, in start order
	output                  map[string]*strings.Builder // by test, until it ends
	skips                   []skipReason                // why tests skipped, in the order first seen
	done                    bool
}

// skipReason is one reason tests of a package skipped, and how many did.
type skipReason struct {
	why string
	n   int
}

// skippedBecause records why test skipped: the first line it logged, without
// the file:line go test puts before it.
func (p *pkg) skippedBecause(logged string) {
	why := "no reason given"
	for _, l := range strings.Split(testOutput(logged), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			why = fileLine.ReplaceAllString(l, "")
			break
		}
	}
	for i := range p.skips {
		if p.skips[i].why == why {
			p.skips[i].n++
			return
		}
	}
	p.skips = append(p.skips, skipReason{why, 1})
}

// fileLine is the position go test writes before a line a test logged.
var fileLine = regexp.MustCompile(`^[\w.-]+\.go:[0-9]+: `)

// report renders events; every method may run beside heartbeat.
type report struct {
	mu       sync.Mutex
	out      io.Writer
	title    string
	module   string
	now      func() time.Time
	start    time.Time
	pkgs     map[string]*pkg
	order    []string          // packages in the order they started
	builds   map[string]string // import path → build output
	failures []string          // "pkg.TestX"
	failedPk int
	ended    []string // commands of -run that failed, and how
	expected []string // packages the run will test (-packages)
	// idleSince is when the last package ended (or the run started): while no
	// package runs, go test is building.
	idleSince time.Time
}

func newReport(out io.Writer, title, module string, now func() time.Time) *report {
	start := now()
	return &report{out: out, title: title, module: module, now: now, start: start, idleSince: start, pkgs: map[string]*pkg{}, builds: map[string]string{}}
}

// read renders the events of in until it ends. Lines that are not JSON
// (a go command's own messages) are passed through.
func (r *report) read(in io.Reader) error { return r.readAs(in, "") }

// readAs reads as read does, with label after the name of every package
// ("impl(1/2)"): two commands may then test one package, each a share of it.
func (r *report) readAs(in io.Reader, label string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			r.mu.Lock()
			fmt.Fprintf(r.out, "%s\n", line)
			r.mu.Unlock()
			continue
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("not go test -json: %w: %.80s", err, line)
		}
		if label != "" {
			if ev.Package != "" {
				ev.Package += label
			}
			if ev.ImportPath != "" {
				ev.ImportPath += label
			}
		}
		r.handle(ev)
	}
	return sc.Err()
}

func (r *report) short(name string) string {
	if s := strings.TrimPrefix(name, r.module); s != "" {
		return s
	}
	return name
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{name: r.short(name), start: r.now(), output: map[string]*strings.Builder{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

func (r *report) handle(ev event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Action {
	case "build-output":
		r.builds[ev.ImportPath] += ev.Output
		return
	case "build-fail":
		fmt.Fprintf(r.out, "FAIL  %s does not build:\n%s", r.short(ev.ImportPath), indent(r.builds[ev.ImportPath]))
		return
	}
	if ev.Package == "" {
		return
	}
	p := r.pkg(ev.Package)
	if ev.Test == "" {
		r.packageEvent(p, ev)
		return
	}
	top := ev.Test
	if i := strings.IndexByte(top, '/'); i >= 0 {
		top = top[:i]
	}
	switch ev.Action {
	case "run":
		if top == ev.Test {
			p.running = append(p.running, ev.Test)
		}
		p.output[ev.Test] = &strings.Builder{}
	case "output":
		if b := p.output[ev.Test]; b != nil {
			b.WriteString(ev.Output)
		}
	case "pass", "skip", "fail":
		switch ev.Action {
		case "pass":
			p.passed++
		case "skip":
			p.skipped++
			if b := p.output[ev.Test]; b != nil {
				p.skippedBecause(b.String())
			} else {
				p.skippedBecause("")
			}
		case "fail":
			p.failed++
			// A parent fails with its subtests: it is printed only for what
			// it logged itself.
			if b := p.output[ev.Test]; b != nil {
				if text := testOutput(b.String()); text != "" || !r.failedChild(p, ev.Test) {
					fmt.Fprintf(r.out, "--- FAIL: %s.%s (%.2fs)\n%s", p.name, ev.Test, ev.Elapsed, text)
				}
			}
			r.failures = append(r.failures, p.name+"."+ev.Test)
		}
		delete(p.output, ev.Test)
		if top == ev.Test {
			p.running = slices.DeleteFunc(p.running, func(s string) bool { return s == ev.Test })
		}
	}
}

// failedChild reports whether a subtest of test failed before it.
func (r *report) failedChild(p *pkg, test string) bool {
	for _, f := range r.failures {
		if strings.HasPrefix(f, p.name+"."+test+"/") {
			return true
		}
	}
	return false
}

func (r *report) packageEvent(p *pkg, ev event) {
	took := time.Duration(ev.Elapsed * float64(time.Second)).Round(100 * time.Millisecond)
	switch ev.Action {
	case "start":
		p.start = r.now()
	case "output":
		// The package's own lines (coverage, ok/FAIL, panics outside a test)
		// are kept for a failure.
		b := p.output[""]
		if b == nil {
			b = &strings.Builder{}
			p.output[""] = b
		}
		b.WriteString(ev.Output)
	case "pass":
		p.done = true
		r.idleSince = r.now()
		fmt.Fprintf(r.out, "ok    %-28s %s  %v\n", p.name, p.counts(), took)
		r.printSkips(p)
	case "skip":
		p.done = true
		r.idleSince = r.now()
		fmt.Fprintf(r.out, "-     %-28s no tests\n", p.name)
	case "fail":
		p.done = true
		r.idleSince = r.now()
		r.failedPk++
		if ev.FailedBuild != "" {
			fmt.Fprintf(r.out, "FAIL  %-28s build failed (%s)\n", p.name, r.short(ev.FailedBuild))
			return
		}
		fmt.Fprintf(r.out, "FAIL  %-28s %s  %v\n", p.name, p.counts(), took)
		r.printSkips(p)
		if p.failed == 0 { // a panic or os.Exit outside any test: the package's own output says why
			if b := p.output[""]; b != nil {
				fmt.Fprint(r.out, indent(b.String()))
			}
		}
	}
}

// printSkips says, a line per reason, why tests of p skipped.
func (r *report) printSkips(p *pkg) {
	for _, s := range p.skips {
		fmt.Fprintf(r.out, "      %d skipped: %s\n", s.n, s.why)
	}
}

func (p *pkg) counts() string {
	s := fmt.Sprintf("%d passed", p.passed)
	if p.skipped > 0 {
		s += fmt.Sprintf(", %d skipped", p.skipped)
	}
	if p.failed > 0 {
		s += fmt.Sprintf(", %d failed", p.failed)
	}
	return s
}

// heartbeat prints a line for each package still running, or, while none
// runs, that the tests are being built.
func (r *report) heartbeat() {
	r.mu.Lock()
	defer r.mu.Unlock()
	running := 0
	for _, p := range r.pkgs {
		if !p.done {
			running++
		}
	}
	var waiting []string
	for _, name := range r.expected {
		if r.pkgs[name] == nil {
			waiting = append(waiting, r.short(name))
		}
	}
	if running == 0 {
		if len(waiting) > 0 {
			fmt.Fprintf(r.out, "...   building the tests of %s (%v since the last result)\n", names(waiting), r.now().Sub(r.idleSince).Round(time.Second))
			return
		}
		fmt.Fprintf(r.out, "...   building the tests (%v since the last result)\n", r.now().Sub(r.idleSince).Round(time.Second))
		return
	}
	if len(waiting) > 0 {
		fmt.Fprintf(r.out, "...   still to build: %s\n", names(waiting))
	}
	for _, name := range r.order {
		p := r.pkgs[name]
		if p.done {
			continue
		}
		running := "starting"
		if p.passed+p.failed+p.skipped > 0 {
			running = "finishing"
		}
		if n := len(p.running); n > 0 {
			running = "running " + strings.Join(p.running[:min(n, 3)], ", ")
			if n > 3 {
				running += fmt.Sprintf(" and %d more", n-3)
			}
		}
		fmt.Fprintf(r.out, "...   %-28s %s so far; %s (%v)\n", p.name, p.counts(), running, r.now().Sub(p.start).Round(time.Second))
	}
}

// names lists packages: the first three and how many more.
func names(pkgs []string) string {
	if len(pkgs) <= 3 {
		return strings.Join(pkgs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(pkgs[:3], ", "), len(pkgs)-3)
}

// finish prints the summary line and reports whether everything passed.
func (r *report) finish() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var passed, failed, skipped int
	for _, p := range r.pkgs {
		passed, failed, skipped = passed+p.passed, failed+p.failed, skipped+p.skipped
	}
	ok := failed == 0 && r.failedPk == 0
	if len(r.ended) > 0 && ok {
		// No test failed, yet a command did: it could not run them all.
		ok = false
		for _, e := range r.ended {
			fmt.Fprintf(r.out, "FAIL  %s\n", e)
		}
	}
	verdict := "passed"
	if !ok {
		verdict = "FAILED"
	}
	fmt.Fprintf(r.out, "%s %s: %d tests passed, %d skipped, %d failed in %d packages (%d failed) in %v\n",
		r.title, verdict, passed, skipped, failed, len(r.pkgs), r.failedPk, r.now().Sub(r.start).Round(time.Second))
	for _, f := range r.failures {
		fmt.Fprintf(r.out, "    failed: %s\n", f)
	}
	return ok
}

// testOutput is what a test logged, without the lines go test adds around it.
func testOutput(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		t := strings.TrimLeft(l, " ")
		if strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- FAIL: ") || strings.HasPrefix(t, "--- PASS: ") || strings.HasPrefix(t, "--- SKIP: ") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "") + "\n"
}
