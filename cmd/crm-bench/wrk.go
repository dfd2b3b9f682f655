package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what wrk measured of a scenario: an outside load generator, so
// that the server is not only measured by a client sharing its process.
type wrkResult struct {
	rps      float64
	p50, p99 time.Duration
	requests int
	errors   int // connection errors, timeouts and non-2xx replies
	skipped  string
	rssMax   int64 // the largest VmRSS of the process (the server alone at work) while wrk ran
	// stored: in a fresh scenario, the counterparties, e-mails and phones the
	// measured run stored (its requests each store one with two and two).
	stored [3]int64
}

// wrkScript is the Lua script that makes wrk send the scenario's sample
// requests in turn; in a fresh scenario each request gets a marker of its own:
// w, the thread, the run (six hexadecimal digits drawn for each run of wrk, so
// that no run repeats the markers of an earlier one, the warm-up's or an
// earlier benchmark's, whose e-mails would make its inserts duplicates) and a
// counter.
const wrkScript = `
local reqs = {
%s}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
request = function()
  n = n + 1
  local r = reqs[(n %% #reqs) + 1]
  local body = r[3]
  if body and %t then
    body = string.gsub(body, "h%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x%%x", string.format("w%%02x%%s%%08x", tid, "%s", n))
  end
  local headers = {["Authorization"] = "Bearer %s"}
  if body then headers["Content-Type"] = "application/json" end
  return wrk.format(r[1], r[2], headers, body)
end
`

// runWrk drives a scenario with wrk over o.clients connections for o.duration
// after o.warmup (a run of its own that is not counted).
func runWrk(ctx context.Context, e *benchEnv, sc scenario, o options) *wrkResult {
	path, err := exec.LookPath("wrk")
	if err != nil {
		return &wrkResult{skipped: "wrk is not installed (make bench installs Debian's package wrk where it can)"}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var reqs strings.Builder
	for range 500 {
		method, target, body := sc.next(rng)
		b := "nil"
		if body != nil {
			b = "[==[" + string(body) + "]==]"
		}
		fmt.Fprintf(&reqs, "  {%q, %q, %s},\n", method, target, b)
	}
	dir, err := os.MkdirTemp("", "crm-bench-wrk")
	if err != nil {
		return &wrkResult{skipped: err.Error()}
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "scenario.lua")
	wrk := func(d time.Duration) ([]byte, error) {
		run := fmt.Sprintf("%06x", rng.Uint32()>>8)
		if err := os.WriteFile(script, fmt.Appendf(nil, wrkScript, reqs.String(), sc.fresh, run, e.token), 0o600); err != nil {
			return nil, err
		}
		secs := strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
		cmd := exec.CommandContext(ctx, path, "-t", "2", "-c", strconv.Itoa(o.clients), "-d", secs+"s", "--latency", "-s", script, e.base)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.Bytes(), err
	}
	if o.warmup > 0 {
		if out, err := wrk(o.warmup); err != nil {
			return &wrkResult{skipped: fmt.Sprintf("wrk failed: %v: %s", err, firstLines(out))}
		}
	}
	var before counts
	if sc.stored != "" {
		if before, err = e.countStored(ctx, sc.stored); err != nil {
			return &wrkResult{skipped: err.Error()}
		}
	}
	out, err := wrk(o.duration)
	if err != nil {
		return &wrkResult{skipped: fmt.Sprintf("wrk failed: %v: %s", err, firstLines(out))}
	}
	r := parseWrk(out)
	if sc.stored != "" && r.skipped == "" {
		after, err := e.countStored(ctx, sc.stored)
		if err != nil {
			return &wrkResult{skipped: err.Error()}
		}
		r.stored = after.minus(before, 'w')
	}
	return r
}

var (
	wrkRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(\d+) requests in`)
	wrkPercent  = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk's report (with --latency).
func parseWrk(out []byte) *wrkResult {
	r := &wrkResult{}
	if m := wrkRPS.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	} else {
		return &wrkResult{skipped: "wrk's report has no Requests/sec: " + firstLines(out)}
	}
	if m := wrkRequests.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.Atoi(string(m[1]))
	}
	for _, m := range wrkPercent.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[3])]
		d := time.Duration(v * float64(unit))
		if string(m[1]) == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		n, _ := strconv.Atoi(string(m[1]))
		r.errors += n
	}
	if m := wrkSocket.FindSubmatch(out); m != nil {
		for _, g := range m[1:] {
			n, _ := strconv.Atoi(string(g))
			r.errors += n
		}
	}
	return r
}

func firstLines(b []byte) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 4)
	return strings.Join(lines[:min(3, len(lines))], " / ")
}
