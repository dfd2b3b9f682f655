package faults

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// deadlineEnv makes every request deadline 2 s.
var deadlineEnv = []string{"DEADLINE_READ=2s", "DEADLINE_LIST=2s", "DEADLINE_WRITE=2s", "DEADLINE_MAIL=2s"}

const deadline = 2 * time.Second

// readyLimit is how long /readyz may take as the client sees it: the server
// answers within 900 ms whatever the database does; the rest is for a machine
// the suite shares with its processes.
const readyLimit = 1250 * time.Millisecond

// postgresProcesses is the private cluster's postmaster and its children
// (the backends and auxiliary processes), read from /proc.
func postgresProcesses(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.dataDir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{pm}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pm) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func signalAll(t *testing.T, pids []int, sig syscall.Signal) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
			t.Errorf("signal %v to %d: %v", sig, pid, err)
		}
	}
}

// load sends reads and inserts to addr from a few clients until stop is
// closed, and checks every reply: an envelope (never a hang past limit, never
// a non-envelope), success or one of the codes allowed while the database is
// away. It returns the replies seen.
type load struct {
	mu      sync.Mutex
	replies []reply
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startLoad(addr string) *load {
	l := &load{stop: make(chan struct{})}
	for w := range 6 {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var r reply
				if w%2 == 0 {
					r = read(addr)
				} else {
					key := fmt.Sprintf("load-%d-%d-%d", time.Now().UnixNano(), w, i)
					r = call(addr, http.MethodPost, "/company/insert", insertBody(key), "Idempotency-Key", key)
				}
				l.mu.Lock()
				l.replies = append(l.replies, r)
				l.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	return l
}

// end stops the load and returns its replies.
func (l *load) end() []reply {
	close(l.stop)
	l.wg.Wait()
	return l.replies
}

// checkReplies fails on any reply that is not a success or an error envelope
// with a code in allowed, or that came later than limit; it returns the
// number of replies by code.
func checkReplies(t *testing.T, replies []reply, limit time.Duration, allowed ...string) map[string]int {
	t.Helper()
	byCode := map[string]int{}
	bad := 0
	for _, r := range replies {
		code := "success"
		if !r.ok() {
			code = r.env.code()
		}
		okCode := code == "success"
		for _, a := range allowed {
			okCode = okCode || code == a
		}
		if r.err != nil || r.envErr != nil || !okCode || r.elapsed > limit {
			if bad++; bad <= 10 {
				t.Errorf("reply: %s (allowed: success, %v within %v)", r, allowed, limit)
			}
			code = "bad"
		} else if code == "500" && !strings.HasPrefix(r.env.Error, "internal error (request id ") {
			t.Errorf("500 without a request id: %s", r)
		}
		byCode[code]++
	}
	return byCode
}

// TestFrozenDatabase stops the postmaster and all its processes with SIGSTOP
// for 8 s under load: the replies are 503 envelopes within the deadline,
// /readyz answers within a second, and after SIGCONT the server recovers by itself.
func TestFrozenDatabase(t *testing.T) {
	need(t)
	s := startServer(t, deadlineEnv...)
	waitHealthy(t, s.addr, 10*time.Second)
	l := startLoad(s.addr)
	time.Sleep(500 * time.Millisecond)
	before := len(l.replies)
	// The postmaster first, so that it forks no backend meanwhile; then its
	// children, found again until no new one shows (one may have been forking).
	pids := postgresProcesses(t)
	signalAll(t, pids[:1], syscall.SIGSTOP)
	for seen := 0; seen != len(pids); {
		seen = len(pids)
		signalAll(t, pids, syscall.SIGSTOP)
		time.Sleep(50 * time.Millisecond)
		pids = postgresProcesses(t)
	}
	defer signalAll(t, pids, syscall.SIGCONT)
	frozenAt := time.Now()
	var ready []reply
	for time.Since(frozenAt) < 8*time.Second {
		ready = append(ready, call(s.addr, http.MethodGet, "/readyz", ""))
		time.Sleep(500 * time.Millisecond)
	}
	l.mu.Lock()
	during := append([]reply(nil), l.replies[before:]...)
	l.mu.Unlock()
	signalAll(t, pids, syscall.SIGCONT)
	thawed := waitHealthy(t, s.addr, 15*time.Second)
	all := l.end()

	// A request may have started before the freeze; grace for the scheduler.
	limit := deadline + time.Second
	byCode := checkReplies(t, during, limit, "503")
	if byCode["503"] == 0 {
		t.Errorf("no 503 while the database was frozen: %v", byCode)
	}
	// /readyz gives the database 800 ms and answers by 900 ms at the latest.
	readyCodes := checkReplies(t, ready, readyLimit, "503")
	if readyCodes["503"] == 0 {
		t.Errorf("/readyz never said 503 while the database was frozen: %v", readyCodes)
	}
	checkReplies(t, all[before+len(during):], 2*deadline+time.Second, "503")
	t.Logf("frozen 8 s: replies %v, /readyz %v; healthy %v after SIGCONT", byCode, readyCodes, thawed.Round(time.Millisecond))
}

// TestDatabaseRestartAndOutage restarts the cluster at once (immediate
// shutdown: SIGQUIT to the postmaster, as pg_ctl restart -m immediate) and
// then stops it for 20 s, under load: envelopes all the while (503, or a 500
// with a request id), never a hang, and recovery by itself each time.
func TestDatabaseRestartAndOutage(t *testing.T) {
	need(t)
	// The webhook worker runs too (it needs a key): its log must tell each
	// outage once and its end once, not a line per round.
	s := startServer(t, append(deadlineEnv, "CRM_WEBHOOKS=on", "CRM_SECRET_KEY="+testSecretKey)...)
	waitHealthy(t, s.addr, 10*time.Second)
	limit := deadline + 2*time.Second

	l := startLoad(s.addr)
	time.Sleep(500 * time.Millisecond)
	pm := postgresProcesses(t)[0]
	if err := syscall.Kill(pm, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	for {
		if err := syscall.Kill(pm, 0); err == syscall.ESRCH {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := crm("db", "start", "faults"); err != nil {
		t.Fatal(err)
	}
	restarted := waitHealthy(t, s.addr, 20*time.Second)
	time.Sleep(500 * time.Millisecond)
	immediate := checkReplies(t, l.end(), limit, "503", "500")
	t.Logf("immediate restart: replies %v; healthy %v after the start", immediate, restarted.Round(time.Millisecond))

	l = startLoad(s.addr)
	time.Sleep(500 * time.Millisecond)
	if _, err := crm("db", "stop"); err != nil {
		t.Fatal(err)
	}
	var ready []reply
	stoppedAt := time.Now()
	for time.Since(stoppedAt) < 20*time.Second {
		ready = append(ready, call(s.addr, http.MethodGet, "/readyz", ""))
		time.Sleep(time.Second)
	}
	if _, err := crm("db", "start", "faults"); err != nil {
		t.Fatal(err)
	}
	recovered := waitHealthy(t, s.addr, 20*time.Second)
	time.Sleep(500 * time.Millisecond)
	outage := checkReplies(t, l.end(), limit, "503", "500")
	if outage["503"]+outage["500"] == 0 {
		t.Errorf("no error envelope during a 20 s outage: %v", outage)
	}
	readyCodes := checkReplies(t, ready, readyLimit, "503")
	t.Logf("20 s outage: replies %v, /readyz %v; healthy %v after the start", outage, readyCodes, recovered.Round(time.Millisecond))

	// Both outages, as the webhook worker logs them: a failure at ERROR and a
	// recovery at INFO for each at most, whatever the rounds in between.
	// The worker backs off up to 30 s while failing, so its recovery from the
	// second outage may come well after the server answers again: wait until
	// every failure logged has its recovery (the first outage's alone is not
	// enough).
	waitFor(t, 40*time.Second, func() bool {
		log := s.logText()
		failed := strings.Count(log, `level=ERROR msg="webhook worker: a round failed`)
		return failed > 0 && strings.Count(log, `level=INFO msg="webhook worker: recovered"`) >= failed
	})
	log := s.logText()
	failed := strings.Count(log, `level=ERROR msg="webhook worker: a round failed`)
	recoveredLines := strings.Count(log, `level=INFO msg="webhook worker: recovered"`)
	if failed < 1 || failed > 2 || recoveredLines != failed || strings.Count(log, `level=ERROR msg="webhook worker`) != failed {
		t.Errorf("the webhook worker logged %d failures and %d recoveries over two outages, want one or two of each:\n%s",
			failed, recoveredLines, grepLines(log, "webhook worker"))
	}
}

// testSecretKey is a CRM_SECRET_KEY for the suite's servers (32 bytes, Base64).
const testSecretKey = "ZmF1bHRzIHN1aXRlIGtleSBvZiAzMiBieXRlcyEhISE="

// grepLines is the lines of log that contain s.
func grepLines(log, s string) string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
