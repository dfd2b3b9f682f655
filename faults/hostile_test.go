package faults

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vmHWM is the peak resident memory of a process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestHostileBodies sends a real process what cost memory out of proportion
// or kept large-request slots for ever: 40 concurrent 1 MiB bodies nested
// half a million levels deep stay far under 200 MiB; every kind of large
// request refused after it took its slot gives the slot back, so that the
// limit's number of large mails is served afterwards; and a client that goes
// away is logged as such, never as an internal error.
func TestHostileBodies(t *testing.T) {
	need(t)
	s := startServer(t, "LARGE_REQUESTS=4")
	waitHealthy(t, s.addr, 10*time.Second)

	t.Run("40 concurrent 1 MiB nested bodies", func(t *testing.T) {
		nested := strings.Repeat("[", 1<<19) + strings.Repeat("]", 1<<19)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[string]int{}
		for range 40 {
			wg.Go(func() {
				r := call(s.addr, http.MethodPost, "/company/update", nested)
				mu.Lock()
				codes[fmt.Sprint(r.status, " ", r.env.code())]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes["200 400"] != 40 {
			t.Errorf("replies %v, want 40 × HTTP 200 code 400", codes)
		}
		if peak := vmHWM(t, s.cmd.Process.Pid); peak > 200<<20 {
			t.Errorf("peak resident memory %d MiB, over 200 MiB", peak>>20)
		}
	})

	t.Run("refused large requests give their slots back", func(t *testing.T) {
		var mailbox int64
		if err := suite.pool.Get(&mailbox, `SELECT id FROM mail_accounts WHERE account_id = $1 AND user_id = $2 ORDER BY id LIMIT 1`,
			suite.account, suite.userID); err != nil {
			t.Fatal(err)
		}
		mail := func(to string) string {
			return fmt.Sprintf(`{"mail": {"account_id": "%d", "to_address": "%s", "subject": "", "body": "%s"}}`,
				mailbox, to, strings.Repeat("QUFB", 400_000))
		}
		for _, c := range []struct{ target, body string }{
			{"/mail/send?x=%zz", mail("a@example.com")},
			{"/mail/send?x=a;b", mail("a@example.com")},
			{"/mail/send", mail(`a\u0000@example.com`)},
			{"/mail/send", strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20)},
		} {
			for range 2 {
				if r := call(s.addr, http.MethodPost, c.target, c.body); r.status != http.StatusOK || r.env.code() != "400" {
					t.Fatalf("%s: %s, want the 400 envelope", c.target, r)
				}
			}
		}
		var wg sync.WaitGroup
		replies := make(chan reply, 4)
		for i := range 4 {
			wg.Go(func() {
				replies <- call(s.addr, http.MethodPost, "/mail/send", mail(fmt.Sprintf("large-%d@example.com", i)))
			})
		}
		wg.Wait()
		close(replies)
		for r := range replies {
			if !r.ok() || r.env.code() != "0" {
				t.Errorf("a large mail after the refusals: %s", r)
			}
		}
	})

	t.Run("a client that goes away", func(t *testing.T) {
		tx, err := suite.pool.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SELECT FROM companies WHERE account_id = $1 AND id = $2 FOR UPDATE`, suite.account, suite.company); err != nil {
			t.Fatal(err)
		}
		conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		body := `{"id": ` + suite.company + `, "note": "from a client that left"}`
		fmt.Fprintf(conn, "POST /company/update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			suite.token, len(body), body)
		waitFor(t, 10*time.Second, func() bool {
			var n int
			_ = suite.pool.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
				AND wait_event_type = 'Lock' AND query LIKE '%crm_company_update%' AND pid <> pg_backend_pid()`)
			return n > 0
		})
		conn.Close()
		waitFor(t, 10*time.Second, func() bool { return strings.Contains(s.logText(), `msg="client went away"`) })
		_ = tx.Rollback()
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(s.logText()))
		for sc.Scan() {
			if strings.Contains(sc.Text(), "path=/company/update") {
				lines = append(lines, sc.Text())
			}
		}
		log := strings.Join(lines, "\n")
		if strings.Contains(log, "level=ERROR") || strings.Contains(log, "internal error") || !strings.Contains(log, "status=499") {
			t.Errorf("the request of a client that left, as logged:\n%s", log)
		}
	})
}
