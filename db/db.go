// Package db holds the PostgreSQL schema of the service as embedded, ordered,
// forward-only migrations, opens connection pools, and starts a private local
// PostgreSQL cluster when no database is configured.
package db

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	neturl "net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq" // the PostgreSQL driver
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrStaleSchema is returned by CheckSchema when migrations are pending.
var ErrStaleSchema = errors.New("the database schema is not up to date: run `crm-server migrate` or serve with --migrate")

// migrationLock is the advisory-lock key that serialises migrations of one
// database between processes ("CRMmigr" in ASCII).
const migrationLock = 0x43524d6d696772

// Migration is one embedded .sql file; its version is the number its name starts with.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// NoTransaction is set by NoTransactionMarker on the file's first line.
	NoTransaction bool
}

// NoTransactionMarker, as the first line of a migration, makes Migrate apply
// that file outside any transaction, statement by statement, still under the
// migration lock, recording its version once every statement has succeeded:
// for CREATE INDEX CONCURRENTLY, which builds an index on a big table without
// locking writes (docs/scale-out.md, "Migrations that do not lock writes").
const NoTransactionMarker = "-- crm:no-transaction"

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive version number and '_'", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, newMigration(version, e.Name(), string(body)))
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[i-1].Name, ms[i].Name)
		}
	}
	return ms, nil
}

// newMigration returns the migration of a file's version, name and text.
func newMigration(version int, name, sql string) Migration {
	first, _, _ := strings.Cut(sql, "\n")
	return Migration{Version: version, Name: name, SQL: sql, NoTransaction: strings.TrimSpace(first) == NoTransactionMarker}
}

// Fingerprint is a short hash of all migrations and function files; databases
// migrated from the same files share it (the tests name their template database after it).
func Fingerprint() (string, error) {
	ms, err := Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Name, m.SQL)
	}
	if err := functionsFingerprint(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, opts ...Option) (*sqlx.DB, error) {
	db, err := openPool(url, opts)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

// OpenGeneric connects to the database at url with sessions whose prepared
// statements get generic plans (plan_cache_mode=force_generic_plan), for the
// statements that plan the same whatever their values (impl.Config.GenericDB).
// On Citus it opens an ordinary pool: a generic plan does not know the account
// its statement routes to, and Citus cannot plan a join for every shard at once
// (it plans router statements itself, and caches the simplest).
func OpenGeneric(ctx context.Context, url string, opts ...Option) (*sqlx.DB, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	probe, err := Open(ctx, url, opts...)
	if err != nil {
		return nil, err
	}
	citus, err := IsCitus(ctx, probe)
	if err != nil || citus {
		if err != nil {
			probe.Close()
			return nil, err
		}
		probe.SetMaxOpenConns(16)
		probe.SetMaxIdleConns(16)
		return probe, nil
	}
	probe.Close()
	q := u.Query()
	q.Set("plan_cache_mode", "force_generic_plan") // lib/pq sends unknown keys as session settings
	u.RawQuery = q.Encode()
	pool, err := Open(ctx, u.String(), opts...)
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(16)
	return pool, nil
}

// Migrate applies the pending migrations under an advisory lock, so that two
// processes starting at once never migrate concurrently, and each version is
// applied once. Consecutive ordinary migrations are applied in one transaction;
// a migration marked no-transaction (NoTransactionMarker) is applied on its own,
// statement by statement outside any transaction. It returns the names of the
// migrations it applied; on an error, those committed before it.
func Migrate(ctx context.Context, db *sqlx.DB) ([]string, error) {
	return MigrateTo(ctx, db, math.MaxInt)
}

// MigrateTo applies the pending migrations up to version (inclusive), as
// Migrate does; tests use it to build a database as an older build left it.
// The function files are applied only when version reaches the newest
// migration.
func MigrateTo(ctx context.Context, db *sqlx.DB, version int) ([]string, error) {
	all, err := Migrations()
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, m := range all {
		if m.Version <= version {
			ms = append(ms, m)
		}
	}
	return migrate(ctx, db, ms)
}

// migrate applies the migrations of ms that the database lacks, in order, on
// one connection that holds the session-level migration lock throughout: a
// no-transaction migration commits its statements one by one, so a
// transaction-scoped lock could not cover it.
func migrate(ctx context.Context, db *sqlx.DB, ms []Migration) (done []string, err error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to migrate: %w", err)
	}
	defer conn.Close()
	// A migration may build indexes for long: the pool's statement_timeout
	// (WithStatementTimeout) is for requests. RESET returns the session to the
	// value its connection parameters set before the pool reuses it.
	if _, err := conn.ExecContext(ctx, `SET statement_timeout = 0`); err != nil {
		return nil, fmt.Errorf("lift the statement timeout: %w", err)
	}
	defer conn.ExecContext(context.Background(), `RESET statement_timeout`)
	if err := lockMigrations(ctx, conn); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLock)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return nil, err
	}
	citus, err := IsCitus(ctx, conn)
	if err != nil {
		return nil, err
	}

	// tx is the open transaction of the ordinary migrations applied since the
	// last no-transaction one, if any.
	var tx *sqlx.Tx
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()
	begin := func() error {
		if tx != nil {
			return nil
		}
		t, err := beginMigration(ctx, conn, citus)
		if err != nil {
			return err
		}
		tx = t
		return nil
	}
	commit := func() error {
		if tx == nil {
			return nil
		}
		err := tx.Commit()
		tx = nil
		if err != nil {
			return fmt.Errorf("commit migrations: %w", err)
		}
		return nil
	}
	var pending []string // applied in tx, not yet committed
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if m.NoTransaction {
			if err := commit(); err != nil {
				return done, err
			}
			done, pending = append(done, pending...), nil
			if err := applyNoTransaction(ctx, conn, m, citus); err != nil {
				return done, err
			}
			done = append(done, m.Name)
			continue
		}
		if err := begin(); err != nil {
			return done, err
		}
		for _, stmt := range statements(m.SQL) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return done, fmt.Errorf("apply migration %s: %w\n%s", m.Name, err, firstLines(stmt, 3))
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return done, fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		if citus {
			// Distributed after each migration, so that the next one alters
			// distributed tables, as it will on a database migrated earlier.
			if err := distribute(ctx, tx); err != nil {
				return done, fmt.Errorf("after migration %s: %w", m.Name, err)
			}
		}
		pending = append(pending, m.Name)
	}
	if err := begin(); err != nil {
		return done, err
	}
	if citus {
		// A single-node database being converted: its tables become distributed
		// even when no migration is pending (docs/scale-out.md).
		if err := distribute(ctx, tx); err != nil {
			return done, err
		}
	}
	// The function files, once the schema they read is complete (functions.go).
	// A MigrateTo that stops at an older version leaves them alone: they are
	// written for the newest schema.
	if len(ms) > 0 && ms[len(ms)-1].Version == latestVersion() {
		applied, err := applyFunctions(ctx, tx, citus)
		if err != nil {
			return done, err
		}
		pending = append(pending, applied...)
	}
	if err := commit(); err != nil {
		return done, err
	}
	return append(done, pending...), nil
}

// lockMigrations takes the session-level migration lock on conn, polling with
// pg_try_advisory_lock rather than waiting in pg_advisory_lock: a waiting
// statement holds a snapshot, and CREATE INDEX CONCURRENTLY in the migrator
// that holds the lock waits for every older snapshot of the database to end,
// so a migrator waiting inside the server would deadlock with it.
func lockMigrations(ctx context.Context, conn *sqlx.Conn) error {
	for {
		var locked bool
		if err := conn.GetContext(ctx, &locked, `SELECT pg_try_advisory_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if locked {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("take the migration lock: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// beginMigration opens the transaction of ordinary migrations on conn.
func beginMigration(ctx context.Context, conn *sqlx.Conn, citus bool) (*sqlx.Tx, error) {
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin migration: %w", err)
	}
	if citus {
		// The list_counts triggers keep exact totals in the writing transaction; on
		// Citus they run on the shards, beside the rows they count.
		if _, err := tx.ExecContext(ctx, `SET LOCAL citus.enable_unsafe_triggers = on`); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("allow triggers on distributed tables: %w", err)
		}
		// One connection per worker for the whole migration: a command on
		// functions or types cannot follow DDL that Citus ran on the shards over
		// several connections in the same transaction.
		if _, err := tx.ExecContext(ctx, `SET LOCAL citus.multi_shard_modify_mode = 'sequential'`); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("run the migration's shard commands on one connection per worker: %w", err)
		}
	}
	return tx, nil
}

// applyNoTransaction applies a no-transaction migration: each statement commits
// on its own (CREATE INDEX CONCURRENTLY cannot run in a transaction block), and
// the version is recorded once all have succeeded. Such a file is written to be
// run again after a failure part-way (IF NOT EXISTS, IF EXISTS). A failed
// CREATE INDEX CONCURRENTLY leaves an INVALID index behind, which IF NOT EXISTS
// would then take for done: every index the file builds so that is still
// invalid is dropped first (DROP INDEX CONCURRENTLY), and built again.
func applyNoTransaction(ctx context.Context, conn *sqlx.Conn, m Migration, citus bool) error {
	stmts := statements(m.SQL)
	if names := concurrentIndexNames(stmts); len(names) > 0 {
		var invalid []string
		if err := conn.SelectContext(ctx, &invalid, `
			SELECT c.relname::text
			  FROM pg_index i
			  JOIN pg_class c ON c.oid = i.indexrelid
			 WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1) AND NOT i.indisvalid
			 ORDER BY 1`, pq.Array(names)); err != nil {
			return fmt.Errorf("migration %s: look for invalid indexes: %w", m.Name, err)
		}
		for _, name := range invalid {
			if _, err := conn.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pq.QuoteIdentifier(name)); err != nil {
				return fmt.Errorf("migration %s: drop the invalid index %s left by a failed build: %w", m.Name, name, err)
			}
		}
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("apply migration %s: %w\n%s", m.Name, err, firstLines(stmt, 3))
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	if citus {
		tx, err := beginMigration(ctx, conn, citus)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := distribute(ctx, tx); err != nil {
			return fmt.Errorf("after migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("after migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// concurrentIndex matches a statement that builds an index concurrently if it
// does not exist, and captures the index's name.
var concurrentIndex = regexp.MustCompile(`(?is)^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+("?)([A-Za-z_][A-Za-z0-9_$]*)"?\s`)

// concurrentIndexNames returns the names of the indexes that stmts build with
// CREATE INDEX CONCURRENTLY IF NOT EXISTS.
func concurrentIndexNames(stmts []string) []string {
	var names []string
	for _, stmt := range stmts {
		if m := concurrentIndex.FindStringSubmatch(stripComments(stmt)); m != nil {
			name := m[2]
			if m[1] == "" {
				name = strings.ToLower(name) // an unquoted identifier folds to lower case
			}
			names = append(names, name)
		}
	}
	return names
}

// stripComments removes the comment lines that lead a statement.
func stripComments(stmt string) string {
	for {
		stmt = strings.TrimSpace(stmt)
		switch {
		case strings.HasPrefix(stmt, "--"):
			if end := strings.IndexByte(stmt, '\n'); end >= 0 {
				stmt = stmt[end+1:]
			} else {
				return ""
			}
		case strings.HasPrefix(stmt, "/*"):
			if end := strings.Index(stmt, "*/"); end >= 0 {
				stmt = stmt[end+2:]
			} else {
				return ""
			}
		default:
			return stmt
		}
	}
}

// CheckSchema returns ErrStaleSchema (wrapped with the pending names) when the
// database lacks an embedded migration, and an error when it has one this build
// does not know (a newer server migrated it).
func CheckSchema(ctx context.Context, db sqlx.QueryerContext) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	var exists bool
	if err := sqlx.GetContext(ctx, db, &exists, `SELECT to_regclass('schema_migrations') IS NOT NULL`); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	applied := map[int]bool{}
	if exists {
		if applied, err = appliedVersions(ctx, db); err != nil {
			return err
		}
	}
	var pending []string
	for _, m := range ms {
		if !applied[m.Version] {
			pending = append(pending, m.Name)
		}
		delete(applied, m.Version)
	}
	if len(pending) > 0 {
		return fmt.Errorf("%w (pending: %s)", ErrStaleSchema, strings.Join(pending, ", "))
	}
	for v := range applied {
		return fmt.Errorf("the database has migration %d, which this build does not know: run a newer server", v)
	}
	stale, err := staleFunctions(ctx, db)
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("%w (functions not current: %s)", ErrStaleSchema, strings.Join(stale, ", "))
	}
	citus, err := IsCitus(ctx, db)
	if err != nil {
		return err
	}
	if citus {
		var local []string
		if err := sqlx.SelectContext(ctx, db, &local, undistributedTables+` ORDER BY 1`); err != nil {
			return fmt.Errorf("check distribution: %w", err)
		}
		if len(local) > 0 {
			return fmt.Errorf("%w (not distributed on Citus: %s)", ErrStaleSchema, strings.Join(local, ", "))
		}
	}
	return nil
}

func appliedVersions(ctx context.Context, q sqlx.QueryerContext) (map[int]bool, error) {
	var versions []int
	if err := sqlx.SelectContext(ctx, q, &versions, `SELECT version FROM schema_migrations`); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}

// statements splits a migration into its statements, so that each is sent on
// its own: Citus propagates some commands (CREATE EXTENSION, CREATE INDEX on a
// distributed table) to the workers with the text of the whole query, which
// must then be that one command. Semicolons inside quotes, dollar-quoted
// bodies and comments do not split.
func statements(sql string) []string {
	var out []string
	start := 0
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"':
			end := strings.IndexByte(sql[i+1:], c)
			for end >= 0 && i+1+end+1 < len(sql) && sql[i+1+end+1] == c { // a doubled quote is one quote character
				next := strings.IndexByte(sql[i+1+end+2:], c)
				if next < 0 {
					end = -1
					break
				}
				end += 2 + next
			}
			if end < 0 {
				i = len(sql)
			} else {
				i += 1 + end
			}
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if end := strings.IndexByte(sql[i:], '\n'); end >= 0 {
				i += end
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if end := strings.Index(sql[i+2:], "*/"); end >= 0 {
				i += 2 + end + 1
			} else {
				i = len(sql)
			}
		case c == '$':
			if tag := dollarTag(sql[i:]); tag != "" {
				if end := strings.Index(sql[i+len(tag):], tag); end >= 0 {
					i += len(tag) + end + len(tag) - 1
				} else {
					i = len(sql)
				}
			}
		case c == ';':
			if s := strings.TrimSpace(sql[start:i]); !onlyComments(s) {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(sql[start:]); !onlyComments(s) {
		out = append(out, s)
	}
	return out
}

// dollarTag returns the dollar-quote tag that s starts with ($$ or $name$), or "".
func dollarTag(s string) string {
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$':
			return s[:i+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 1 && c >= '0' && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

// onlyComments reports whether s holds no SQL but comments and white space.
func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			return false
		}
	}
	return true
}

// firstLines returns the first n lines of s, to name a statement in an error.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}

// latestVersion is the version of the newest embedded migration.
func latestVersion() int {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
