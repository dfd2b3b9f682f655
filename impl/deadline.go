package impl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"
)

// Deadlines are the time limits of requests by class of operation
// (info.description, Deadlines). Each operation gets a context that ends at its
// class's deadline, a PostgreSQL statement_timeout of the time it has left in
// each transaction it opens, and an answer (the 503 envelope) when the deadline
// passes, whatever the database and the driver do.
type Deadlines struct {
	// Read: the card, directories, the quick lists and the other single reads;
	// also the authentication of every request (DEADLINE_READ, 5 s).
	Read time.Duration
	// List: the universal list, the dashboards and the event feed (DEADLINE_LIST, 15 s).
	List time.Duration
	// Write: inserts, updates, deletes (DEADLINE_WRITE, 10 s).
	Write time.Duration
	// Mail: POST /mail/send, whose body may be 10 MiB, and POST /webhook/test,
	// which waits for the receiver (DEADLINE_MAIL, 30 s; the test delivery gets
	// at least the webhook timeout plus 5 s).
	Mail time.Duration
}

// DefaultDeadlines are the deadlines of a server whose operator set none.
var DefaultDeadlines = Deadlines{Read: 5 * time.Second, List: 15 * time.Second, Write: 10 * time.Second, Mail: 30 * time.Second}

// withDefaults fills the zero deadlines from DefaultDeadlines.
func (d Deadlines) withDefaults() Deadlines {
	if d.Read <= 0 {
		d.Read = DefaultDeadlines.Read
	}
	if d.List <= 0 {
		d.List = DefaultDeadlines.List
	}
	if d.Write <= 0 {
		d.Write = DefaultDeadlines.Write
	}
	if d.Mail <= 0 {
		d.Mail = DefaultDeadlines.Mail
	}
	return d
}

// Longest is the longest of the deadlines: the statement_timeout of the
// server's connections, which bounds any statement whose cancellation got lost.
func (d Deadlines) Longest() time.Duration {
	d = d.withDefaults()
	return max(d.Read, d.List, d.Write, d.Mail)
}

// deadlineOf is the deadline of one operation, by its method and path.
func (d Deadlines) deadlineOf(method, path string, webhookTimeout time.Duration) time.Duration {
	switch {
	case path == "/mail/send":
		return d.Mail
	case path == "/webhook/test":
		return max(d.Mail, webhookTimeout+5*time.Second)
	case strings.HasPrefix(path, "/common/list/"), strings.HasPrefix(path, "/dashboard/"), path == "/event/list":
		return d.List
	case method == http.MethodGet:
		return d.Read
	default:
		return d.Write
	}
}

// errDeadline is the reply when an operation runs past its deadline.
var errDeadline = &Error{Code: CodeNotReady, Msg: "service unavailable: the database did not answer in time"}

// errUnreachable is the reply when the database cannot be reached at all.
var errUnreachable = &Error{Code: CodeNotReady, Msg: "service unavailable: the database cannot be reached"}

// unavailable maps the errors of a database that did not answer in time or
// cannot be reached to their 503 envelope, and returns nil for any other error.
func unavailable(err error) *Error {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch code := string(pqErr.Code); {
		case code == "57014": // query_canceled: statement_timeout, or our cancellation at the deadline
			return errDeadline
		case code == "55P03": // lock_not_available: the lock_timeout of a writing function's budget (callWrite)
			return errDeadline
		case code == "57P01", code == "57P02", code == "57P03", strings.HasPrefix(code, "08"):
			// shutdown by the administrator, crash, cannot connect now, connection exceptions
			return errUnreachable
		}
		return nil
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errDeadline
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errUnreachable
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		if netErr.Timeout() {
			return errDeadline
		}
		return errUnreachable
	}
	return nil
}

// setStatementTimeout gives the statements of tx the time its context has left
// (SET LOCAL, so the setting ends with the transaction), so that PostgreSQL
// itself stops a statement that would outlive the request's deadline even when
// the driver's cancellation does not reach it. Without a deadline it does nothing.
func setStatementTimeout(ctx context.Context, tx interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	ms := time.Until(deadline).Milliseconds()
	if ms < 1 {
		return context.DeadlineExceeded
	}
	if _, err := tx.ExecContext(ctx, `SELECT set_config('statement_timeout', $1, true)`, fmt.Sprintf("%dms", ms)); err != nil {
		return fmt.Errorf("set the statement timeout: %w", err)
	}
	return nil
}

// within runs fn with a context that ends after d (none when d is not
// positive) and answers for it when it
// does not return in time: the 503 envelope is written at the deadline, and
// whatever fn writes afterwards is discarded (fn may be stuck in the driver,
// which does not always notice a cancelled context while the database is
// frozen). It reports whether fn's own reply stands. fn sees a copy of the
// request's information (requestInfo), copied back when fn replies, so that a
// late fn never races with the access log.
func (s *Server) within(w http.ResponseWriter, r *http.Request, d time.Duration,
	fn func(w http.ResponseWriter, r *http.Request)) bool {
	if d <= 0 { // no deadline (a mux built without NewHandler's defaults, as the fuzz harness's)
		fn(w, r)
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	outer := infoFrom(ctx)
	inner := &requestInfo{}
	if outer != nil {
		*inner = *outer
	}
	g := &guardedWriter{w: w, header: http.Header{}, outer: outer, inner: inner}
	done := make(chan struct{})
	rr := r.WithContext(context.WithValue(ctx, infoKey, inner))
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				s.log.ErrorContext(rr.Context(), "panic", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				s.writeError(g, rr, errors.New("panic"))
			}
		}()
		fn(g, rr)
	}()
	select {
	case <-done:
		g.finish()
		return true
	case <-ctx.Done():
	}
	if !g.expire() {
		// fn is replying already: let it finish (the server's WriteTimeout bounds it).
		<-done
		g.finish()
		return true
	}
	s.writeError(w, r, errDeadline)
	return false
}

// guardedWriter lets either the operation or its deadline reply, whichever
// comes first, and drops the other's reply.
type guardedWriter struct {
	mu           sync.Mutex
	w            http.ResponseWriter
	header       http.Header // the operation's, copied to w when it replies
	outer, inner *requestInfo
	state        int // 0 nobody replied, 1 the operation replies, 2 the deadline did
}

func (g *guardedWriter) Header() http.Header { return g.header }

// claim makes the operation the one that replies, unless the deadline was first.
func (g *guardedWriter) claim() bool {
	if g.state == 0 {
		g.state = 1
		h := g.w.Header()
		for k, v := range g.header {
			h[k] = v
		}
		if g.outer != nil {
			*g.outer = *g.inner
		}
	}
	return g.state == 1
}

func (g *guardedWriter) WriteHeader(status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.claim() {
		g.w.WriteHeader(status)
	}
}

func (g *guardedWriter) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.claim() {
		return g.w.Write(b)
	}
	return len(b), nil
}

// expire makes the deadline the one that replies, unless the operation was first.
func (g *guardedWriter) expire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == 0 {
		g.state = 2
	}
	return g.state == 2
}

// lateWriter reports whether w is the writer of an operation whose reply the
// deadline's wrapper gave already (what it writes is dropped).
func lateWriter(w http.ResponseWriter) bool {
	g, ok := w.(*guardedWriter)
	if !ok {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state == 2
}

// finish copies what the operation learnt about the request back, once it returned.
func (g *guardedWriter) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != 2 && g.outer != nil {
		*g.outer = *g.inner
	}
}
