package db_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/db"
)

// notxBase is a schema of its own for the tests of no-transaction migrations:
// a table of 400 rows whose index on slow_key takes about two seconds to build
// (5 ms a row), long enough to write to the table while it builds.
var notxBase = db.NewMigration(1, "0001_base.sql", `
CREATE TABLE accounts (id bigint PRIMARY KEY);
CREATE TABLE items (account_id bigint NOT NULL, id bigint NOT NULL, v text NOT NULL, PRIMARY KEY (account_id, id));
CREATE FUNCTION slow_key(x bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM pg_sleep(0.005);
    RETURN x;
END $$;
INSERT INTO accounts (id) VALUES (1);
INSERT INTO items (account_id, id, v) SELECT 1, g, 'v' || g FROM generate_series(1, 400) g;
`)

// notxSlowIndex builds the slow index concurrently.
var notxSlowIndex = db.NewMigration(2, "0002_slow.sql", db.NoTransactionMarker+`
-- the slow index, built without locking writes
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_slow ON items (account_id, slow_key(id));
`)

// indexState reports whether the index name exists and whether it is valid.
func indexState(t *testing.T, pool *sqlx.DB, name string) (exists, valid bool) {
	t.Helper()
	var valid_ []bool
	if err := pool.Select(&valid_, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relnamespace = 'public'::regnamespace AND c.relname = $1`, name); err != nil {
		t.Fatal(err)
	}
	if len(valid_) > 1 {
		t.Fatalf("%d indexes named %s", len(valid_), name)
	}
	return len(valid_) == 1, len(valid_) == 1 && valid_[0]
}

// appliedNames returns the names schema_migrations records, in version order.
func appliedNames(t *testing.T, pool *sqlx.DB) []string {
	t.Helper()
	var names []string
	if err := pool.Select(&names, `SELECT name FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	return names
}

// writeDuringBuild runs m in the background, waits until its statement that
// mentions index is running, and then inserts a row into items from another
// session with a lock_timeout of 300 ms. It returns the insert's error and
// the migration's result, and fails the test when the migration had ended
// before the insert (the test would then prove nothing).
func writeDuringBuild(t *testing.T, pool *sqlx.DB, m db.Migration, index string, id int64) (insertErr, migrateErr error) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.MigrateList(ctx, pool, []db.Migration{notxBase}); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := db.MigrateList(ctx, pool, []db.Migration{notxBase, m})
		result <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var running bool
		if err := pool.Get(&running, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
			  AND query LIKE '%CREATE%INDEX%' || $1 || '%')`, index); err != nil {
			t.Fatal(err)
		}
		if running {
			break
		}
		select {
		case err := <-result:
			t.Fatalf("the migration ended (%v) before its index build was seen running", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the index build was never seen running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // into the build's scan of the table
	writer, err := pool.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, `SET lock_timeout = '300ms'`); err != nil {
		t.Fatal(err)
	}
	_, insertErr = writer.ExecContext(ctx, `INSERT INTO items (account_id, id, v) VALUES (1, $1, 'during')`, id)
	select {
	case err := <-result:
		t.Fatalf("the migration ended (%v) before the insert did: make the build slower", err)
	default:
	}
	return insertErr, <-result
}

func TestMigrateNoTransaction(t *testing.T) {
	ctx := context.Background()

	t.Run("the marker", func(t *testing.T) {
		if !notxSlowIndex.NoTransaction || notxBase.NoTransaction {
			t.Fatalf("NoTransaction: marked %t, unmarked %t", notxSlowIndex.NoTransaction, notxBase.NoTransaction)
		}
		ms, err := db.Migrations()
		if err != nil {
			t.Fatal(err)
		}
		// Every embedded migration marked so builds its indexes concurrently and
		// can be run again; every other one builds none concurrently.
		marked := 0
		for _, m := range ms {
			var lines []string // the lines of SQL, not of comments
			for _, line := range strings.Split(strings.ToUpper(m.SQL), "\n") {
				if line = strings.TrimSpace(line); !strings.HasPrefix(line, "--") {
					lines = append(lines, line)
				}
			}
			if !m.NoTransaction {
				for _, line := range lines {
					if strings.Contains(line, "CONCURRENTLY") {
						t.Errorf("%s: %q without %q on its first line", m.Name, line, db.NoTransactionMarker)
					}
				}
				continue
			}
			marked++
			for _, line := range lines {
				if strings.HasPrefix(line, "CREATE INDEX") || strings.HasPrefix(line, "CREATE UNIQUE INDEX") {
					if !strings.Contains(line, "INDEX CONCURRENTLY IF NOT EXISTS") {
						t.Errorf("%s: %q: a no-transaction migration builds CONCURRENTLY IF NOT EXISTS", m.Name, line)
					}
				}
				if strings.HasPrefix(line, "DROP INDEX") && !strings.Contains(line, "DROP INDEX CONCURRENTLY IF EXISTS") {
					t.Errorf("%s: %q: a no-transaction migration drops CONCURRENTLY IF EXISTS", m.Name, line)
				}
			}
		}
		if marked < 2 {
			t.Errorf("%d embedded migrations marked no-transaction, want 0007 and 0067 at least", marked)
		}
	})

	t.Run("writes go on while the index builds", func(t *testing.T) {
		pool := emptyDatabase(t)
		insertErr, err := writeDuringBuild(t, pool, notxSlowIndex, "items_slow", 100000)
		if err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		if insertErr != nil {
			t.Fatalf("an insert during CREATE INDEX CONCURRENTLY: %v, want it to go through", insertErr)
		}
		if exists, valid := indexState(t, pool, "items_slow"); !exists || !valid {
			t.Fatalf("items_slow exists %t, valid %t; want a valid index", exists, valid)
		}
		if got := appliedNames(t, pool); !slices.Equal(got, []string{"0001_base.sql", "0002_slow.sql"}) {
			t.Fatalf("schema_migrations: %v", got)
		}
		var n int
		if err := pool.Get(&n, `SELECT count(*) FROM items WHERE account_id = 1`); err != nil || n != 401 {
			t.Fatalf("%d items (%v), want 401", n, err)
		}
	})

	t.Run("control: a migration in a transaction blocks the writer", func(t *testing.T) {
		// The same build in an ordinary migration holds a SHARE lock on items
		// until it commits: the writer's lock_timeout ends its wait. This shows
		// that the test above can see a blocked writer.
		pool := emptyDatabase(t)
		locking := db.NewMigration(2, "0002_locking.sql", `CREATE INDEX items_slow ON items (account_id, slow_key(id));`)
		insertErr, err := writeDuringBuild(t, pool, locking, "items_slow", 100000)
		if err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		var pqErr *pq.Error
		if !errors.As(insertErr, &pqErr) || pqErr.Code != "55P03" {
			t.Fatalf("an insert during a plain CREATE INDEX: %v, want lock_not_available (55P03)", insertErr)
		}
	})

	t.Run("a failed build is rebuilt on the next run", func(t *testing.T) {
		pool := emptyDatabase(t)
		if _, err := db.MigrateList(ctx, pool, []db.Migration{notxBase}); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(`INSERT INTO items (account_id, id, v) VALUES (1, 1000, 'v1')`); err != nil {
			t.Fatal(err)
		}
		unique := db.NewMigration(3, "0003_unique.sql", db.NoTransactionMarker+`
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS items_v ON items (account_id, v);
`)
		ms := []db.Migration{notxBase, unique}
		done, err := db.MigrateList(ctx, pool, ms)
		if err == nil || !strings.Contains(err.Error(), "0003_unique.sql") {
			t.Fatalf("Migrate over a duplicate: applied %v (%v), want an error naming 0003_unique.sql", done, err)
		}
		if exists, valid := indexState(t, pool, "items_v"); !exists || valid {
			t.Fatalf("after the failed build items_v exists %t, valid %t; want an invalid leftover", exists, valid)
		}
		if got := appliedNames(t, pool); !slices.Equal(got, []string{"0001_base.sql"}) {
			t.Fatalf("schema_migrations after the failure: %v, want 0003 unrecorded", got)
		}
		if _, err := pool.Exec(`DELETE FROM items WHERE account_id = 1 AND id = 1000`); err != nil {
			t.Fatal(err)
		}
		done, err = db.MigrateList(ctx, pool, ms)
		if err != nil || !slices.Equal(done, []string{"0003_unique.sql"}) {
			t.Fatalf("Migrate after the fix: applied %v (%v), want 0003_unique.sql", done, err)
		}
		if exists, valid := indexState(t, pool, "items_v"); !exists || !valid {
			t.Fatalf("after the rerun items_v exists %t, valid %t; want it rebuilt valid", exists, valid)
		}
		if _, err := pool.Exec(`INSERT INTO items (account_id, id, v) VALUES (1, 1001, 'v2')`); err == nil {
			t.Fatal("the rebuilt unique index let a duplicate in")
		}
		if got := appliedNames(t, pool); !slices.Equal(got, []string{"0001_base.sql", "0003_unique.sql"}) {
			t.Fatalf("schema_migrations: %v", got)
		}
	})

	t.Run("migrators at once apply each version once", func(t *testing.T) {
		// The ones that wait for the lock must not wait inside a statement:
		// CREATE INDEX CONCURRENTLY waits for every older snapshot, so it would
		// deadlock with a migrator waiting in pg_advisory_lock.
		pool := emptyDatabase(t)
		after := db.NewMigration(3, "0003_after.sql", `CREATE TABLE notes (account_id bigint NOT NULL, id bigint NOT NULL, PRIMARY KEY (account_id, id));`)
		ms := []db.Migration{notxBase, notxSlowIndex, after}
		var wg sync.WaitGroup
		applied := make([][]string, 4)
		errs := make([]error, 4)
		for i := range applied {
			wg.Add(1)
			go func() {
				defer wg.Done()
				applied[i], errs[i] = db.MigrateList(ctx, pool, ms)
			}()
		}
		wg.Wait()
		var all []string
		for i := range applied {
			if errs[i] != nil {
				t.Fatalf("Migrate %d: %v", i, errs[i])
			}
			all = append(all, applied[i]...)
		}
		slices.Sort(all)
		if want := []string{"0001_base.sql", "0002_slow.sql", "0003_after.sql"}; !slices.Equal(all, want) {
			t.Fatalf("applied in all %v, want each of %v once", all, want)
		}
		if exists, valid := indexState(t, pool, "items_slow"); !exists || !valid {
			t.Fatalf("items_slow exists %t, valid %t", exists, valid)
		}
	})
}
