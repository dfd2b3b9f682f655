package impl_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"sync"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
)

// shortDeadlines makes every operation class end after 1.5 s: short for a test,
// long enough for a busy machine to answer a request that nothing blocks.
func shortDeadlines(cfg *impl.Config) {
	d := 1500 * time.Millisecond
	cfg.Deadlines = impl.Deadlines{Read: d, List: d, Write: d, Mail: d}
}

// expectUnavailable asserts the 503 envelope of an operation past its deadline.
func expectUnavailable(t *testing.T, r reply, value string) {
	t.Helper()
	if r.HTTPStatus != http.StatusServiceUnavailable || r.Status != "error" || r.code() != "503" || r.Value != value ||
		r.Rows != 0 || r.Pages != 0 || r.Page != 0 || r.errorText() != "service unavailable: the database did not answer in time" {
		t.Fatalf("want the 503 envelope, got HTTP %d %s", r.HTTPStatus, r.Raw)
	}
}

func TestDeadlines(t *testing.T) {
	e := newEnv(t, shortDeadlines)
	w := e.newWorld(t, "acme")
	id, _ := newCompany(t, e, w, "Locked Ltd", w.member)

	t.Run("a statement blocked by a lock", func(t *testing.T) {
		// Another session holds the table: every statement that reads it waits,
		// until the deadline cancels it (or the statement timeout stops it).
		tx, err := e.db.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`LOCK TABLE companies IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		expectUnavailable(t, e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", id)), "")
		expectUnavailable(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": id, "note": "late"}), "0")
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND note = 'late'`, id); n != 0 {
			t.Fatalf("the timed-out update was written")
		}
		if n := e.count(t, `SELECT count(*) FROM journal WHERE account_id = $1 AND entity = 'company' AND record_id = $2 AND action = 'update'`, w.accountID, id); n != 0 {
			t.Fatalf("the timed-out update was journaled")
		}
		// The lock gone, the same requests work.
		expectOK(t, e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", id)))
		expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": id, "note": "in time"}))
	})

	t.Run("a statement that runs too long", func(t *testing.T) {
		// The transaction's statement_timeout (SET LOCAL, the time left) stops it
		// in PostgreSQL itself.
		var timeout string
		conn, err := e.server.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := impl.SetStatementTimeout(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT current_setting('statement_timeout')`).Scan(&timeout); err != nil {
			t.Fatal(err)
		}
		if timeout == "0" || timeout == "" {
			t.Fatalf("statement_timeout %q: not set", timeout)
		}
		_, err = tx.ExecContext(context.Background(), `SELECT pg_sleep(5)`)
		if impl.Unavailable(err) == nil {
			t.Fatalf("pg_sleep past the statement timeout: %v, want a 503", err)
		}
	})
}

func TestDeadlinesFrozenDatabase(t *testing.T) {
	e := newEnv(t, shortDeadlines)
	w := e.newWorld(t, "acme")
	id, _ := newCompany(t, e, w, "Frozen Ltd", w.member)
	// The server talks to its database through a proxy that can freeze.
	proxy := newFreezer(t, e.serverURL)
	pool, err := db.Open(context.Background(), proxy.url(t), db.WithStatementTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	cfg := impl.Config{DB: pool}
	shortDeadlines(&cfg)
	if e.handler, err = impl.NewHandler(cfg); err != nil {
		t.Fatal(err)
	}
	expectOK(t, e.get(t, "", "/readyz"))
	expectOK(t, e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", id)))

	// The database stops answering, as a SIGSTOPped PostgreSQL does: the
	// connections stay open and nothing comes back, cancellations included.
	proxy.freeze(true)
	expectUnavailable(t, e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", id)), "")
	expectUnavailable(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": id, "note": "frozen"}), "0")
	expectUnavailable(t, e.do(t, request{method: "POST", target: "/common/list/paging/1?columns=id", token: w.admin.token}), "")
	r := e.get(t, "", "/readyz")
	if r.HTTPStatus != http.StatusServiceUnavailable || r.code() != "503" {
		t.Fatalf("/readyz of a frozen database: HTTP %d %s", r.HTTPStatus, r.Raw)
	}
	proxy.freeze(false)
	// Back: the server recovers by itself (the stuck statements end, or their
	// connections are dropped as bad).
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.get(t, w.admin.token, fmt.Sprintf("/company/get?id=%d", id))
		if r.code() == "<null>" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the database came back: %s", r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := e.count(t, `SELECT count(*) FROM companies WHERE id = $1 AND note = 'frozen'`, id); n != 0 {
		// The update's statement was held, not lost: it may run when the
		// database thaws, but its deadline's SET LOCAL statement_timeout and
		// the cancellation make it fail; never a reply of success.
		t.Logf("note: the frozen update committed after the thaw")
	}
}

// freezer is a TCP proxy to a database that can stop passing bytes, as a
// stopped (SIGSTOP) PostgreSQL does: connections open, nothing answers.
type freezer struct {
	target string // host:port of the database
	dbURL  string
	ln     net.Listener
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	down   bool // connections are cut and refused, as a stopped PostgreSQL's
	conns  []net.Conn
	closed bool
}

func newFreezer(t *testing.T, url string) *freezer {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{target: u.Host, dbURL: url, ln: ln}
	f.cond = sync.NewCond(&f.mu)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

// url is the database's URL through the proxy.
func (f *freezer) url(t *testing.T) string {
	t.Helper()
	u, err := neturl.Parse(f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = f.ln.Addr().String()
	return u.String()
}

func (f *freezer) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		down := f.down
		f.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, up)
		f.mu.Unlock()
		go f.pipe(up, c)
		go f.pipe(c, up)
	}
}

// pipe copies from src to dst, holding every chunk while the proxy is frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		for f.frozen && !f.closed {
			f.cond.Wait()
		}
		f.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze(on bool) {
	f.mu.Lock()
	f.frozen = on
	f.mu.Unlock()
	f.cond.Broadcast()
}

// stop cuts every connection and refuses new ones until started again, as a
// database that was shut down (on is false: it answers again).
func (f *freezer) stop(on bool) {
	f.mu.Lock()
	f.down = on
	conns := f.conns
	if on {
		f.conns = nil
	}
	f.mu.Unlock()
	if on {
		for _, c := range conns {
			c.Close()
		}
	}
}

func (f *freezer) close() {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.mu.Unlock()
	f.cond.Broadcast()
	f.ln.Close()
	for _, c := range conns {
		c.Close()
	}
}
