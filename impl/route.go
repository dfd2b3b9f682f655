package impl

import (
	"context"
	"sync"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
)

// Every statement of a request goes to the node that holds the caller's
// account (db.Router, docs/scale-out.md): on plain PostgreSQL the one
// database, on Citus the worker of the account. The account is known from the
// token's own text before its lookup, so even that reads one node.

// dbNode is a node's pools with their caches of prepared statements.
type dbNode struct {
	db      *sqlx.DB
	stmts   *stmtCache // prepared statements, planned for their values
	generic *stmtCache // prepared statements with one generic plan
}

func newDBNode(pool, generic *sqlx.DB) *dbNode {
	if generic == nil {
		generic = pool
	}
	return &dbNode{db: pool, stmts: newStmtCache(pool, 200), generic: newStmtCache(generic, 100)}
}

// nodes are the dbNodes of a router's nodes, made on first use.
type nodes struct {
	router *db.Router // nil: everything on home
	home   *dbNode    // the coordinator, or the one database
	mu     sync.Mutex
	byAddr map[string]*dbNode
}

// routeKey is the context key of the account a request's statements go by.
const routeKey ctxKey = 101

// withAccount routes the statements run with ctx to account's node.
func withAccount(ctx context.Context, account int64) context.Context {
	return context.WithValue(ctx, routeKey, account)
}

// node returns the node of ctx's account (withAccount, or the principal's),
// or the home node outside a request (the workers, which cross accounts).
func (s *Server) node(ctx context.Context) *dbNode {
	if s.nodes.router == nil {
		return s.nodes.home
	}
	account, ok := ctx.Value(routeKey).(int64)
	if !ok {
		if p, err := principal(ctx); err == nil {
			account, ok = p.AccountID, true
		}
	}
	if !ok {
		return s.nodes.home
	}
	n := s.nodes.router.For(ctx, account)
	if n.Addr == "" {
		return s.nodes.home
	}
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	dn := s.nodes.byAddr[n.Addr]
	if dn == nil {
		dn = newDBNode(n.DB, n.Generic)
		s.nodes.byAddr[n.Addr] = dn
	}
	return dn
}

// db is the ordinary pool of ctx's node.
func (s *Server) db(ctx context.Context) *sqlx.DB { return s.node(ctx).db }

// stmts are the prepared statements of ctx's node, planned for their values.
func (s *Server) stmts(ctx context.Context) *stmtCache { return s.node(ctx).stmts }

// generic are the prepared statements of ctx's node with generic plans.
func (s *Server) generic(ctx context.Context) *stmtCache { return s.node(ctx).generic }
