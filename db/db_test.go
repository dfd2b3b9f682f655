package db_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// emptyDatabase creates a database without any migration and drops it afterwards.
func emptyDatabase(t *testing.T) *sqlx.DB {
	t.Helper()
	dbtest.RequireOwnDatabase(t)
	ctx := context.Background()
	server := dbtest.ServerURL(t)
	admin, err := db.Open(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "crm_migrate_" + hex.EncodeToString(suffix[:])
	if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	pool, err := db.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Error(err)
		}
	})
	return pool
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	ms, err := db.Migrations()
	if err != nil || len(ms) == 0 {
		t.Fatalf("migrations: %v %d", err, len(ms))
	}

	t.Run("stale before, current after, idempotent", func(t *testing.T) {
		pool := emptyDatabase(t)
		if err := db.CheckSchema(ctx, pool); !errors.Is(err, db.ErrStaleSchema) {
			t.Fatalf("CheckSchema of an empty database: %v, want ErrStaleSchema", err)
		}
		done, err := db.Migrate(ctx, pool)
		if err != nil || len(done) != len(ms) {
			t.Fatalf("Migrate applied %v (%v), want all %d", done, err, len(ms))
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
		if total != len(ms) {
			t.Fatalf("%d migrations applied in all, want %d (each once)", total, len(ms))
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
