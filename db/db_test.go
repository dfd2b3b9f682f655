package db_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// emptyDatabase creates a database without any migration and drops it
// afterwards (on Citus, a distributed one: make test-citus).
func emptyDatabase(t *testing.T) *sqlx.DB {
	t.Helper()
	pool, err := db.Open(context.Background(), dbtest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	ms, err := db.Migrations()
	if err != nil || len(ms) == 0 {
		t.Fatalf("migrations: %v %d", err, len(ms))
	}
	fns, err := db.FunctionFiles()
	if err != nil || len(fns) == 0 {
		t.Fatalf("function files: %v %d", err, len(fns))
	}
	all := len(ms) + len(fns) // each migration and function file once

	t.Run("stale before, current after, idempotent", func(t *testing.T) {
		pool := emptyDatabase(t)
		if err := db.CheckSchema(ctx, pool); !errors.Is(err, db.ErrStaleSchema) {
			t.Fatalf("CheckSchema of an empty database: %v, want ErrStaleSchema", err)
		}
		done, err := db.Migrate(ctx, pool)
		if err != nil || len(done) != all {
			t.Fatalf("Migrate applied %v (%v), want all %d migrations and function files", done, err, all)
		}
		if err := db.CheckSchema(ctx, pool); err != nil {
			t.Fatalf("CheckSchema after Migrate: %v", err)
		}
		if done, err := db.Migrate(ctx, pool); err != nil || len(done) != 0 {
			t.Fatalf("second Migrate applied %v (%v), want nothing", done, err)
		}
	})

	t.Run("two processes at once", func(t *testing.T) {
		pool := emptyDatabase(t)
		var wg sync.WaitGroup
		applied := make([][]string, 4)
		errs := make([]error, 4)
		for i := range applied {
			wg.Add(1)
			go func() {
				defer wg.Done()
				applied[i], errs[i] = db.Migrate(ctx, pool)
			}()
		}
		wg.Wait()
		total := 0
		for i := range applied {
			if errs[i] != nil {
				t.Fatalf("Migrate %d: %v", i, errs[i])
			}
			total += len(applied[i])
		}
		if total != all {
			t.Fatalf("%d migrations and function files applied in all, want %d (each once)", total, all)
		}
	})

	t.Run("a function file changed", func(t *testing.T) {
		pool := emptyDatabase(t)
		if _, err := db.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		// As a database migrated by a build whose file differed.
		if _, err := pool.Exec(`UPDATE schema_functions SET sha256 = 'older' WHERE name = $1`, fns[0].Name); err != nil {
			t.Fatal(err)
		}
		if err := db.CheckSchema(ctx, pool); !errors.Is(err, db.ErrStaleSchema) || !strings.Contains(err.Error(), fns[0].Name) {
			t.Fatalf("CheckSchema: %v, want ErrStaleSchema naming %s", err, fns[0].Name)
		}
		done, err := db.Migrate(ctx, pool)
		if err != nil || !slices.Equal(done, []string{"functions/" + fns[0].Name}) {
			t.Fatalf("Migrate applied %v (%v), want only functions/%s", done, err, fns[0].Name)
		}
		if err := db.CheckSchema(ctx, pool); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a database newer than the build", func(t *testing.T) {
		pool := emptyDatabase(t)
		if _, err := db.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(`INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')`); err != nil {
			t.Fatal(err)
		}
		err := db.CheckSchema(ctx, pool)
		if err == nil || errors.Is(err, db.ErrStaleSchema) || !strings.Contains(err.Error(), "9999") {
			t.Fatalf("CheckSchema: %v, want an error naming migration 9999", err)
		}
	})
}

// TestMigrateOverData applies the newest five migrations (0065, 0066, the
// concurrent index builds of 0067, the KPI by day of 0068 and the row types of
// 0069) and the function files to a database
// that the ones before them created and that holds records, as an upgrade of a
// running deployment does (on Citus, where DDL on shards with rows differs,
// too).
func TestMigrateOverData(t *testing.T) {
	ctx := context.Background()
	ms, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	pool := emptyDatabase(t)
	newest := ms[len(ms)-5:]
	var want []string
	for _, m := range newest {
		want = append(want, m.Name)
	}
	fns, err := db.FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		want = append(want, "functions/"+f.Name)
	}
	if _, err := db.MigrateTo(ctx, pool, newest[0].Version-1); err != nil {
		t.Fatal(err)
	}
	// Records of several accounts (on Citus, in several shards) in the tables of
	// the first migration, whose columns every later schema keeps.
	var accountID int64
	for a := range 8 {
		var userID, typeID int64
		if err := pool.GetContext(ctx, &accountID, `INSERT INTO accounts (name, base_currency, time_zone) VALUES ($1, 'EUR', 'UTC') RETURNING id`,
			fmt.Sprintf("Upgrade %d", a)); err != nil {
			t.Fatal(err)
		}
		if err := pool.GetContext(ctx, &userID, `INSERT INTO users (account_id, name, login, role) VALUES ($1, 'Admin', 'admin@upgrade.example', 'admin') RETURNING id`,
			accountID); err != nil {
			t.Fatal(err)
		}
		if err := pool.GetContext(ctx, &typeID, `INSERT INTO directory_values (account_id, directory_code, name) VALUES ($1, 9, 'Client') RETURNING id`, accountID); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			var companyID int64
			if err := pool.GetContext(ctx, &companyID, `INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, $2, $3, $4) RETURNING id`,
				accountID, fmt.Sprintf("Company %d", i), typeID, userID); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.ExecContext(ctx, `INSERT INTO emails (account_id, company_id, email) VALUES ($1, $2, $3)`,
				accountID, companyID, fmt.Sprintf("c%d@upgrade.example", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	done, err := db.Migrate(ctx, pool)
	if err != nil || !slices.Equal(done, want) {
		t.Fatalf("Migrate over data applied %v (%v), want %v", done, err, want)
	}
	if err := db.CheckSchema(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.GetContext(ctx, &n, `SELECT count(*) FROM companies WHERE account_id = $1`, accountID); err != nil || n != 20 {
		t.Fatalf("%d counterparties after the upgrade (%v), want 20", n, err)
	}
	if err := pool.GetContext(ctx, &n, `SELECT count(*) FROM company_names WHERE account_id = $1`, accountID); err != nil || n != 20 {
		t.Fatalf("%d rows of company_names after the upgrade (%v), want 20", n, err)
	}
	// The counterparties the account's admin added (today, in UTC: the
	// account's zone) are counted in kpi_daily.
	if err := pool.GetContext(ctx, &n, `SELECT coalesce(sum(n), 0) FROM kpi_daily WHERE account_id = $1 AND metric = 1`,
		accountID); err != nil || n != 20 {
		t.Fatalf("kpi_daily after the upgrade counts %d counterparties (%v), want 20", n, err)
	}
	var valid []string
	if err := pool.SelectContext(ctx, &valid, `SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname IN ('phones_contact', 'emails_contact', 'company_names_trgm') AND i.indisvalid`); err != nil || len(valid) != 3 {
		t.Fatalf("valid indexes of 0067: %v (%v), want all three", valid, err)
	}
}

// TestLegacyTokensRouted checks that migration 0008 records the tokens issued
// before tokens named their account, so that they keep working after it.
func TestLegacyTokensRouted(t *testing.T) {
	ctx := context.Background()
	pool := emptyDatabase(t)
	if _, err := db.MigrateTo(ctx, pool, 7); err != nil {
		t.Fatal(err)
	}
	var accountID, userID int64
	if err := pool.GetContext(ctx, &accountID, `INSERT INTO accounts (name, base_currency, time_zone) VALUES ('Old', 'EUR', 'UTC') RETURNING id`); err != nil {
		t.Fatal(err)
	}
	if err := pool.GetContext(ctx, &userID, `INSERT INTO users (account_id, name, login, role) VALUES ($1, 'A', 'a@old.example', 'admin') RETURNING id`, accountID); err != nil {
		t.Fatal(err)
	}
	hash := bytes.Repeat([]byte{7}, 32)
	if _, err := pool.ExecContext(ctx, `INSERT INTO tokens (account_id, user_id, hash) VALUES ($1, $2, $3)`, accountID, userID, hash); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var routed int64
	if err := pool.GetContext(ctx, &routed, `SELECT account FROM legacy_tokens WHERE hash = $1`, hash); err != nil || routed != accountID {
		t.Fatalf("legacy token routed to %d (%v), want %d", routed, err, accountID)
	}
	// A token is unique within its account, no longer across the database.
	if _, err := pool.ExecContext(ctx, `INSERT INTO tokens (account_id, user_id, hash) VALUES ($1, $2, $3)`, accountID, userID, hash); err == nil {
		t.Fatal("the same hash twice in one account was accepted")
	}
}

// TestMaxLifetime checks that WithMaxLifetime replaces a session once it is
// that old: the next statement runs in another backend.
func TestMaxLifetime(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.NewURL(t), db.WithMaxLifetime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pool.SetMaxOpenConns(1)
	var first, again, later int
	for _, pid := range []*int{&first, &again} {
		if err := pool.Get(pid, `SELECT pg_backend_pid()`); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1200 * time.Millisecond)
	if err := pool.Get(&later, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	if first != again || later == first || pool.Stats().MaxLifetimeClosed != 1 {
		t.Errorf("backends %d, %d, then %d; closed for their age: %d", first, again, later, pool.Stats().MaxLifetimeClosed)
	}
}
