package impl

import (
	"container/list"
	"context"
	"sync"

	"github.com/jmoiron/sqlx"
)

// stmtCache keeps prepared statements of the hot reads by their text. lib/pq
// otherwise sends every query as an unnamed statement, which PostgreSQL parses
// and plans on each execution; for the list, card and token statements planning
// costs more than running them. A prepared statement is planned once per
// connection (or given a generic plan), so the cache trades a little memory on
// the server, bounded by max statements per connection, for that time.
type stmtCache struct {
	db      *sqlx.DB
	max     int
	mu      sync.Mutex
	order   *list.List // front: most recently used; values are *cachedStmt
	byQuery map[string]*list.Element
}

type cachedStmt struct {
	query string
	stmt  *sqlx.Stmt
}

func newStmtCache(db *sqlx.DB, max int) *stmtCache {
	return &stmtCache{db: db, max: max, order: list.New(), byQuery: map[string]*list.Element{}}
}

// prepared returns the prepared statement of query, preparing it on first use
// and closing the least recently used one beyond the bound.
func (c *stmtCache) prepared(ctx context.Context, query string) (*sqlx.Stmt, error) {
	c.mu.Lock()
	if e, ok := c.byQuery[query]; ok {
		c.order.MoveToFront(e)
		st := e.Value.(*cachedStmt).stmt
		c.mu.Unlock()
		return st, nil
	}
	c.mu.Unlock()

	st, err := c.db.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byQuery[query]; ok { // prepared meanwhile by another request
		st.Close()
		c.order.MoveToFront(e)
		return e.Value.(*cachedStmt).stmt, nil
	}
	c.byQuery[query] = c.order.PushFront(&cachedStmt{query: query, stmt: st})
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*cachedStmt)
		delete(c.byQuery, old.query)
		go old.stmt.Close() // waits for executions in progress
	}
	return st, nil
}

// get runs a cached statement that returns one row into dest. A statement
// closed by eviction between lookup and use is run once more unprepared.
func (c *stmtCache) get(ctx context.Context, dest any, query string, args ...any) error {
	st, err := c.prepared(ctx, query)
	if err != nil {
		return err
	}
	err = st.GetContext(ctx, dest, args...)
	if err != nil && isClosedStmt(err) {
		return c.db.GetContext(ctx, dest, query, args...)
	}
	return err
}

// sel runs a cached statement that returns rows into the slice dest, as get
// does.
func (c *stmtCache) sel(ctx context.Context, dest any, query string, args ...any) error {
	st, err := c.prepared(ctx, query)
	if err != nil {
		return err
	}
	err = st.SelectContext(ctx, dest, args...)
	if err != nil && isClosedStmt(err) {
		return c.db.SelectContext(ctx, dest, query, args...)
	}
	return err
}
