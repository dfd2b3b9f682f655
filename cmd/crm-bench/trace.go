package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"

	"github.com/lib/pq"
)

// statement is one statement the server sent to PostgreSQL, with its arguments
// in the form the driver received them.
type statement struct {
	query    string
	args     []driver.NamedValue
	prepared bool // run through a statement the server prepared
	generic  bool // on a session of generic plans (impl.Config.GenericDB)
}

// recorder collects the statements of the requests it is switched on for, so
// that the benchmark can replay exactly the server's SQL directly.
type recorder struct {
	mu    sync.Mutex
	on    bool
	trace []statement
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.trace = true, nil
}

func (r *recorder) stop() []statement {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.trace
}

func (r *recorder) add(query string, args []driver.NamedValue, prepared, generic bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.trace = append(r.trace, statement{query: query, args: append([]driver.NamedValue(nil), args...), prepared: prepared, generic: generic})
	}
}

// tracingConnector opens lib/pq connections whose statements go through rec.
type tracingConnector struct {
	pq      *pq.Connector
	rec     *recorder
	generic bool
}

func openTracing(url string, rec *recorder, generic bool) (*sql.DB, error) {
	c, err := pq.NewConnector(url)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(tracingConnector{pq: c, rec: rec, generic: generic}), nil
}

func (c tracingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tracingConn{conn: conn, rec: c.rec, generic: c.generic}, nil
}

func (c tracingConnector) Driver() driver.Driver { return c.pq.Driver() }

// tracingConn forwards everything to the lib/pq connection and records the
// statements; lib/pq implements every interface used here.
type tracingConn struct {
	conn    driver.Conn
	rec     *recorder
	generic bool
}

func (c *tracingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *tracingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &tracingStmt{stmt: st, query: query, rec: c.rec, generic: c.generic}, nil
}

func (c *tracingConn) Close() error { return c.conn.Close() }

func (c *tracingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *tracingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.rec.add("BEGIN", nil, false, c.generic)
	tx, err := c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tracingTx{tx: tx, rec: c.rec, generic: c.generic}, nil
}

func (c *tracingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.add(query, args, false, c.generic)
	return c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *tracingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.add(query, args, false, c.generic)
	return c.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *tracingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if checker, ok := c.conn.(driver.NamedValueChecker); ok {
		return checker.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *tracingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *tracingConn) IsValid() bool {
	if v, ok := c.conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type tracingTx struct {
	tx      driver.Tx
	rec     *recorder
	generic bool
}

func (t tracingTx) Commit() error {
	t.rec.add("COMMIT", nil, false, t.generic)
	return t.tx.Commit()
}

func (t tracingTx) Rollback() error {
	t.rec.add("ROLLBACK", nil, false, t.generic)
	return t.tx.Rollback()
}

type tracingStmt struct {
	stmt    driver.Stmt
	query   string
	rec     *recorder
	generic bool
}

func (s *tracingStmt) Close() error  { return s.stmt.Close() }
func (s *tracingStmt) NumInput() int { return s.stmt.NumInput() }

func (s *tracingStmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errors.New("crm-bench: Stmt.Exec without a context")
}

func (s *tracingStmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errors.New("crm-bench: Stmt.Query without a context")
}

func (s *tracingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.rec.add(s.query, args, true, s.generic)
	return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *tracingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.rec.add(s.query, args, true, s.generic)
	return s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// replayer replays recorded requests on connections of its own, one of each
// kind of session the server used, preparing the statements the server had
// prepared once per connection, as the server does.
type replayer struct {
	conns map[bool]*sql.Conn // by generic
	stmts map[bool]map[string]*sql.Stmt
}

func newReplayer(ctx context.Context, plain, generic *sql.DB) (*replayer, error) {
	r := &replayer{conns: map[bool]*sql.Conn{}, stmts: map[bool]map[string]*sql.Stmt{false: {}, true: {}}}
	for kind, db := range map[bool]*sql.DB{false: plain, true: generic} {
		conn, err := db.Conn(ctx)
		if err != nil {
			r.close()
			return nil, err
		}
		r.conns[kind] = conn
	}
	return r, nil
}

func (r *replayer) close() {
	for _, stmts := range r.stmts {
		for _, st := range stmts {
			st.Close()
		}
	}
	for _, c := range r.conns {
		c.Close()
	}
}

// replay runs a recorded request's statements, in a transaction where the
// server used one, reading every row as the server did.
func (r *replayer) replay(ctx context.Context, trace []statement) error {
	for _, st := range trace {
		conn := r.conns[st.generic]
		switch st.query {
		case "BEGIN", "COMMIT", "ROLLBACK":
			if _, err := conn.ExecContext(ctx, st.query); err != nil {
				return err
			}
			continue
		}
		args := make([]any, len(st.args))
		for i, a := range st.args {
			args[i] = a.Value
		}
		var rows *sql.Rows
		var err error
		if st.prepared {
			prep := r.stmts[st.generic][st.query]
			if prep == nil {
				if prep, err = conn.PrepareContext(ctx, st.query); err != nil {
					return err
				}
				r.stmts[st.generic][st.query] = prep
			}
			rows, err = prep.QueryContext(ctx, args...)
		} else {
			rows, err = conn.QueryContext(ctx, st.query, args...)
		}
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}
