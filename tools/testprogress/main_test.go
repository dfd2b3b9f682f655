package main

import (
	"strings"
	"testing"
	"time"
)

// clock is a time that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

const stream = `go: downloading example.com/x v1.0.0
{"Action":"start","Package":"github.com/crmservice/crm/impl"}
{"Action":"start","Package":"github.com/crmservice/crm/db"}
{"Action":"run","Package":"github.com/crmservice/crm/impl","Test":"TestA"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"github.com/crmservice/crm/impl","Test":"TestA","Elapsed":0.5}
{"Action":"run","Package":"github.com/crmservice/crm/impl","Test":"TestB"}
{"Action":"run","Package":"github.com/crmservice/crm/impl","Test":"TestB/sub"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestB/sub","Output":"    b_test.go:12: want 2, got 3\n"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestB/sub","Output":"    --- FAIL: TestB/sub (0.10s)\n"}
{"Action":"fail","Package":"github.com/crmservice/crm/impl","Test":"TestB/sub","Elapsed":0.1}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestB","Output":"--- FAIL: TestB (0.10s)\n"}
{"Action":"fail","Package":"github.com/crmservice/crm/impl","Test":"TestB","Elapsed":0.1}
{"Action":"run","Package":"github.com/crmservice/crm/impl","Test":"TestC"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestC","Output":"=== RUN   TestC\n"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestC","Output":"    c_test.go:7: skipped: no Redis answers at 127.0.0.1:6379\n"}
{"Action":"output","Package":"github.com/crmservice/crm/impl","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}
{"Action":"skip","Package":"github.com/crmservice/crm/impl","Test":"TestC"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestD"}
{"Action":"skip","Package":"github.com/crmservice/crm/db","Test":"TestD"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestE"}
{"Action":"output","Package":"github.com/crmservice/crm/db","Test":"TestE","Output":"    e_test.go:9: the database has no citus extension: make test-citus runs this test\n"}
{"Action":"skip","Package":"github.com/crmservice/crm/db","Test":"TestE"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestF"}
{"Action":"output","Package":"github.com/crmservice/crm/db","Test":"TestF","Output":"    e_test.go:9: the database has no citus extension: make test-citus runs this test\n"}
{"Action":"skip","Package":"github.com/crmservice/crm/db","Test":"TestF"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestLong"}
HEARTBEAT
{"Action":"fail","Package":"github.com/crmservice/crm/impl","Elapsed":12.34}
{"Action":"pass","Package":"github.com/crmservice/crm/db","Test":"TestLong","Elapsed":20}
{"Action":"pass","Package":"github.com/crmservice/crm/db","Elapsed":20}
{"ImportPath":"github.com/crmservice/crm/broken [github.com/crmservice/crm/broken.test]","Action":"build-output","Output":"broken/x.go:3:1: syntax error\n"}
{"ImportPath":"github.com/crmservice/crm/broken [github.com/crmservice/crm/broken.test]","Action":"build-fail"}
{"Action":"start","Package":"github.com/crmservice/crm/broken"}
{"Action":"fail","Package":"github.com/crmservice/crm/broken","Elapsed":0,"FailedBuild":"github.com/crmservice/crm/broken [github.com/crmservice/crm/broken.test]"}
{"Action":"start","Package":"github.com/crmservice/crm/gen"}
{"Action":"skip","Package":"github.com/crmservice/crm/gen","Elapsed":0}
`

func TestReport(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	var out strings.Builder
	r := newReport(&out, "make test", "github.com/crmservice/crm/", c.now)
	before, after, _ := strings.Cut(stream, "HEARTBEAT\n")
	c.t = c.t.Add(5 * time.Second)
	r.heartbeat() // nothing started: go test builds
	if err := r.read(strings.NewReader(before)); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(10 * time.Second)
	r.heartbeat()
	if err := r.read(strings.NewReader(after)); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(10 * time.Second)
	if r.finish() {
		t.Error("finish reports success")
	}
	want := `...   building the tests (5s since the last result)
go: downloading example.com/x v1.0.0
--- FAIL: impl.TestB/sub (0.10s)
    b_test.go:12: want 2, got 3
...   impl                         1 passed, 1 skipped, 2 failed so far; finishing (10s)
...   db                           0 passed, 3 skipped so far; running TestLong (10s)
FAIL  impl                         1 passed, 1 skipped, 2 failed  12.3s
      1 skipped: skipped: no Redis answers at 127.0.0.1:6379
ok    db                           1 passed, 3 skipped  20s
      1 skipped: no reason given
      2 skipped: the database has no citus extension: make test-citus runs this test
FAIL  broken [github.com/crmservice/crm/broken.test] does not build:
    broken/x.go:3:1: syntax error
FAIL  broken                       build failed (broken [github.com/crmservice/crm/broken.test])
-     gen                          no tests
make test FAILED: 2 tests passed, 4 skipped, 2 failed in 4 packages (2 failed) in 25s
    failed: impl.TestB/sub
    failed: impl.TestB
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestReportPasses(t *testing.T) {
	c := &clock{t: time.Now()}
	var out strings.Builder
	r := newReport(&out, "make test", "github.com/crmservice/crm/", c.now)
	in := `{"Action":"start","Package":"github.com/crmservice/crm/db"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestX"}
{"Action":"pass","Package":"github.com/crmservice/crm/db","Test":"TestX","Elapsed":1}
{"Action":"pass","Package":"github.com/crmservice/crm/db","Elapsed":1}
`
	if err := r.read(strings.NewReader(in)); err != nil || !r.finish() {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.HasSuffix(out.String(), "make test passed: 1 tests passed, 0 skipped, 0 failed in 1 packages (0 failed) in 0s\n") {
		t.Errorf("%s", out.String())
	}
	if err := newReport(&out, "", "", c.now).read(strings.NewReader("{not json\n")); err == nil {
		t.Error("a broken line was read")
	}
}

// TestRunAll runs two commands at once: the report merges their events, and
// a command that fails without a failed test fails the run all the same.
func TestRunAll(t *testing.T) {
	c := &clock{t: time.Now()}
	var out strings.Builder
	r := newReport(&out, "make test", "github.com/crmservice/crm/", c.now)
	failed, err := r.runAll([]string{
		`(1/2) sleep 0.2; printf '%s\n' '{"Action":"start","Package":"github.com/crmservice/crm/db"}' '{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestX"}' '{"Action":"pass","Package":"github.com/crmservice/crm/db","Test":"TestX","Elapsed":1}' '{"Action":"pass","Package":"github.com/crmservice/crm/db","Elapsed":1}'`,
		`echo 'go: cannot find main module'; exit 3`,
	})
	if err != nil || !failed {
		t.Fatalf("runAll: failed %t, %v", failed, err)
	}
	if r.finish() {
		t.Error("finish reports success")
	}
	want := "go: cannot find main module\nok    db(1/2)                      1 passed  1s\n" +
		"FAIL  echo 'go: cannot find main module'; exit 3 ended with exit status 3\n" +
		"make test FAILED: 1 tests passed, 0 skipped, 0 failed in 1 packages (0 failed) in 0s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestHeartbeatNamesWaitingPackages: with -packages, the heartbeat names the
// packages that have not started, which go test is still building.
func TestHeartbeatNamesWaitingPackages(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	var out strings.Builder
	r := newReport(&out, "make test", "github.com/crmservice/crm/", c.now)
	for _, p := range []string{"impl", "db", "sdk", "tools", "docs"} {
		r.expected = append(r.expected, "github.com/crmservice/crm/"+p)
	}
	c.t = c.t.Add(10 * time.Second)
	r.heartbeat()
	if err := r.read(strings.NewReader(`{"Action":"start","Package":"github.com/crmservice/crm/db"}
{"Action":"run","Package":"github.com/crmservice/crm/db","Test":"TestX"}
`)); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(10 * time.Second)
	r.heartbeat()
	want := `...   building the tests of impl, db, sdk and 2 more (10s since the last result)
...   still to build: impl, sdk, tools and 1 more
...   db                           0 passed so far; running TestX (10s)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
