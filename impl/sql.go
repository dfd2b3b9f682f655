package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
)

// A statement is written one way in this package: a template whose values are
// placeholders ($n, from arg or bind) and whose variable fragments are named
// slots ({name}, from set or bind). Values never enter the SQL text; fragments
// come only from code (the access rules, the list modules' whitelists).
//
//	q := newSQL()
//	q.bind("acc", p.AccountID)
//	q.set("visible", p.seesOwner(q, "c.user_id"))
//	err := db.GetContext(ctx, &n, q.expand(`SELECT count(*) FROM companies c WHERE c.account_id = {acc} AND {visible}`), q.args...)
//
// A slot is recognised as a brace around a name of letters, digits and
// underscores; a template that names a slot nobody set panics, since it is a
// programming error that no input can cause.

// sqlText is one statement being built: its arguments and its named slots.
type sqlText struct {
	args  []any
	names []string       // per argument, the name it was bound by ("" for arg)
	bound map[string]any // the values of bind by name
	slots map[string]func() string
}

func newSQL() *sqlText {
	return &sqlText{slots: map[string]func() string{}, bound: map[string]any{}}
}

// arg appends a value and returns its placeholder.
func (q *sqlText) arg(v any) string {
	return q.appendArg("", v)
}

func (q *sqlText) appendArg(name string, v any) string {
	q.args = append(q.args, v)
	q.names = append(q.names, name)
	return "$" + strconv.Itoa(len(q.args))
}

// bind names a value: {name} becomes its placeholder, appended when a template
// first uses it (PostgreSQL cannot type a placeholder that no text uses).
func (q *sqlText) bind(name string, v any) {
	ph := ""
	q.bound[name] = v
	q.slots[name] = func() string {
		if ph == "" {
			ph = q.appendArg(name, v)
		}
		return ph
	}
}

// set names a fragment of SQL: {name} becomes the fragment, itself expanded.
func (q *sqlText) set(name, fragment string) {
	q.slots[name] = func() string { return fragment }
}

// expand fills the slots of a template.
func (q *sqlText) expand(template string) string {
	return q.expandDepth(template, 0)
}

func (q *sqlText) expandDepth(template string, depth int) string {
	if depth > 8 {
		panic("impl: SQL slots nest more than 8 deep: " + template)
	}
	var b strings.Builder
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		n := slotNameLen(rest[i+1:])
		if n == 0 || i+1+n >= len(rest) || rest[i+1+n] != '}' {
			b.WriteString(rest[:i+1])
			rest = rest[i+1:]
			continue
		}
		name := rest[i+1 : i+1+n]
		fill, ok := q.slots[name]
		if !ok {
			panic("impl: SQL template uses the unknown slot {" + name + "}")
		}
		b.WriteString(rest[:i])
		b.WriteString(q.expandDepth(fill(), depth+1))
		rest = rest[i+2+n:]
	}
}

// slotNameLen is the length of the slot name that s starts with: a letter,
// then letters, digits and underscores.
func slotNameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_'):
		default:
			return i
		}
	}
	return len(s)
}

// inTx runs fn in a transaction and commits when it returns nil. Inside a
// request made with an Idempotency-Key it joins that request's transaction
// (idempotency.go) through a savepoint instead: fn's writes commit with the
// stored reply, and a failure of fn undoes only them.
func (s *Server) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	if tx := ambientTx(ctx); tx != nil {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT write`); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		if err := fn(tx); err != nil {
			if _, rbErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT write`); rbErr != nil {
				return fmt.Errorf("%w (and rolling back to the savepoint: %v)", err, rbErr)
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT write`); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
		return nil
	}
	tx, err := s.db(ctx).BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := setStatementTimeout(ctx, tx); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// listResult is what the statement of a list reads: the total and the JSON
// array of the rows.
type listResult struct {
	Rows  int    `db:"rows"`
	Value string `db:"value"`
}

// quickList runs a statement that answers one row (rows, value) and returns
// the envelope of a list without paging.
func (s *Server) quickList(ctx context.Context, q *sqlText, template string) (gen.Envelope, error) {
	var out listResult
	if err := s.db(ctx).GetContext(ctx, &out, q.expand(template), q.args...); err != nil {
		return gen.Envelope{}, err
	}
	return quickListEnvelope(out), nil
}

// quickPage is the page number of a list without paging: 1, or 0 when empty.
func quickPage(rows int) int {
	if rows == 0 {
		return 0
	}
	return 1
}

// parseIDs reads one id or comma-separated ids.
func parseIDs(name, v string) ([]int64, error) {
	var ids []int64
	for _, part := range strings.Split(v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || id <= 0 {
			return nil, badRequest("%s: %q is not a list of ids", name, v)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// escapeLike makes LIKE's wildcards and escape character in s match themselves.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// isClosedStmt reports the error of a cached statement closed by eviction
// between lookup and use.
func isClosedStmt(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "statement is closed")
}

// byCompanyOrDeal sets {byCompanyOrDeal}, the condition of the quick lists by
// counterparty and/or deal over the rows of alias t; one of the two is required.
func byCompanyOrDeal(q *sqlText, t string, companyID, dealID *int64) error {
	if companyID == nil && dealID == nil {
		return badRequest("company_id or deal_id is required")
	}
	cond := "TRUE"
	if companyID != nil {
		cond = t + ".company_id = " + q.arg(*companyID)
	}
	if dealID != nil {
		cond += " AND " + t + ".deal_id = " + q.arg(*dealID)
	}
	q.set("byCompanyOrDeal", cond)
	return nil
}

// values is the column list and the VALUES of an INSERT of row, a struct whose
// fields carry db tags: "(a, b) VALUES ($1, $2)". Fields tagged "-" or untagged
// are left out.
func (q *sqlText) values(row any) string {
	cols, phs := q.columns(row)
	return "(" + cols + ") VALUES (" + phs + ")"
}

// columns is the column list of row (as values) and their placeholders:
// "a, b" and "$1, $2".
func (q *sqlText) columns(row any) (cols, placeholders string) {
	v := reflect.ValueOf(row)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	t := v.Type()
	names := make([]string, 0, t.NumField())
	phs := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		col := t.Field(i).Tag.Get("db")
		if col == "" || col == "-" {
			continue
		}
		names = append(names, col)
		phs = append(phs, q.arg(v.Field(i).Interface()))
	}
	return strings.Join(names, ", "), strings.Join(phs, ", ")
}

// callWrite calls fn, a writing function of db/functions, with args and the
// request's remaining time in milliseconds as its last argument
// (p_budget_ms, db/functions/budget.sql), and scans the columns of its one row
// into dest. The call is a transaction by itself, on the request's node with
// its plan kept (stmtCache), or, under an Idempotency-Key, a part of the
// key's transaction (a savepoint of it, as inTx). The function holds the
// deadline itself: it waits for no lock past it, and rolls back what it wrote
// when the time ran out before it returns, because the server cannot take
// back a commit that follows its giving up.
func (s *Server) callWrite(ctx context.Context, dest any, columns, fn string, args ...any) error {
	var budget sql.NullInt64
	if deadline, ok := ctx.Deadline(); ok {
		ms := time.Until(deadline).Milliseconds() - callWriteMargin.Milliseconds()
		if ms < 1 {
			return context.DeadlineExceeded
		}
		budget = sql.NullInt64{Int64: ms, Valid: true}
	}
	args = append(args, budget)
	placeholders := make([]string, len(args))
	for i := range args {
		placeholders[i] = "$" + strconv.Itoa(i+1)
	}
	query := s.call(newCallStmt("SELECT " + columns + " FROM " + fn + "(" + strings.Join(placeholders, ", ") + ")"))
	if ambientTx(ctx) != nil {
		return s.inTx(ctx, func(tx *sqlx.Tx) error {
			return tx.GetContext(ctx, dest, query, args...)
		})
	}
	return s.generic(ctx).get(ctx, dest, query, args...)
}

// callWriteMargin is what callWrite keeps of the request's time for the
// commit and the reply after the function's last check.
const callWriteMargin = 50 * time.Millisecond

// keptPlan returns call, a SELECT of a function of db/functions, with a WHERE
// that holds for every row and that no planner folds away. On Citus it lets a
// session keep the call's generic plan: Citus makes the generic plan of a bare
// call of a distributed function with parameters cost too much to choose
// (DissuadePlannerFromUsingPlan), so that it can try to delegate the call once
// the values are known, and every execution plans the call again, on the
// worker a routed request reaches as on the coordinator. Every function Citus
// created on the workers is distributed in that sense, those without a
// distribution argument too. A statement with a WHERE is never delegated: the
// node that gets it runs the function itself. Plain PostgreSQL only tests the
// condition once per call. db/functions writes its own calls of functions
// the same way (budget.sql).
func keptPlan(call string) string {
	return call + " WHERE pg_backend_pid() IS NOT NULL"
}

// callStmt is a call of a function of db/functions in its two forms: bare,
// for a Citus coordinator that delegates it to the account's node
// (CITUS_ROUTING=off), and with its plan kept (keptPlan) for the node that
// runs it, which the server reaches everywhere else.
type callStmt struct{ bare, kept string }

func newCallStmt(call string) callStmt { return callStmt{bare: call, kept: keptPlan(call)} }

// call gives c in the form the server's nodes take.
func (s *Server) call(c callStmt) string {
	if s.delegateCalls {
		return c.bare
	}
	return c.kept
}
