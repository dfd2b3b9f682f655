// Package dbtest gives tests a throwaway PostgreSQL database with the current
// schema. Each database is a copy of a template migrated once per set of
// migrations, so a new one costs a CREATE DATABASE, not a migration.
//
// The server is DATABASE_URL when set; otherwise the private cluster under the
// repository's .data directory, started on first use.
//
// With CRM_TEST_DB=shared, DATABASE_URL names one database that every test
// uses (migrated once), and tests keep apart by working in accounts of their
// own. That is how the tests run on Citus, which cannot copy a database from a
// template; a test that needs a database of its own calls RequireOwnDatabase.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
)

// templateLock is the advisory-lock key under which templates are built and
// copied ("CRMtmpl").
const templateLock = 0x43524d746d706c

// Shared reports whether the tests share one database (CRM_TEST_DB=shared).
func Shared() bool { return os.Getenv("CRM_TEST_DB") == "shared" }

// RequireOwnDatabase skips a test that needs a database of its own (one that
// counts or changes what every account shares) when the tests share one.
func RequireOwnDatabase(t testing.TB) {
	t.Helper()
	if Shared() {
		t.Skip("dbtest: the tests share one database (CRM_TEST_DB=shared), and this test needs its own")
	}
}

// New returns a connection pool to a new, empty, migrated database that is
// dropped when the test ends (the shared database, with CRM_TEST_DB=shared).
func New(t testing.TB) *sqlx.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := db.Open(ctx, NewURL(t))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// NewURL creates a new, empty, migrated database that is dropped when the test
// ends, and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if Shared() {
		return sharedURL(ctx, t)
	}

	serverURL := ServerURL(t)
	admin, err := db.Open(ctx, withDatabase(t, serverURL, "postgres"))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer admin.Close()

	tmpl := templateName(t)
	name := "crm_test_" + randomHex(6)
	conn, err := admin.Connx(ctx)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer conn.Close()
	// The lock is per session: it serialises template builds and copies between
	// test processes (go test runs packages in parallel).
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, templateLock); err != nil {
		t.Fatalf("dbtest: lock: %v", err)
	}
	err = func() error {
		defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, templateLock)
		var exists bool
		if err := conn.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tmpl); err != nil {
			return err
		}
		if !exists {
			if err := buildTemplate(ctx, conn, serverURL, tmpl); err != nil {
				return fmt.Errorf("build template %s: %w", tmpl, err)
			}
		}
		_, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl))
		return err
	}()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := db.Open(ctx, withDatabase(t, serverURL, "postgres"))
		if err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
			return
		}
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
		}
	})
	return withDatabase(t, serverURL, name)
}

// buildTemplate migrates a new database under a temporary name and renames it,
// so a template is either complete or absent.
func buildTemplate(ctx context.Context, conn *sqlx.Conn, serverURL, tmpl string) error {
	building := tmpl + "_building"
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	u.Path = "/" + building
	pool, err := db.Open(ctx, u.String())
	if err != nil {
		return err
	}
	_, err = db.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, tmpl))
	return err
}

// ServerURL is the URL of the PostgreSQL server the tests use: DATABASE_URL, or
// the private cluster of the repository (started if needed).
func ServerURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if Shared() {
			// The server of the shared database, reached through its maintenance database.
			return withDatabase(t, u, "postgres")
		}
		return u
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("dbtest: DATABASE_URL is not set and %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := db.EnsureLocal(ctx, filepath.Join(root, ".data"), nil)
	if err != nil {
		t.Fatalf("dbtest: DATABASE_URL is not set and the local cluster did not start: %v", err)
	}
	return cluster.URL("postgres")
}

func templateName(t testing.TB) string {
	t.Helper()
	fp, err := db.Fingerprint()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return "crm_tmpl_" + fp
}

func withDatabase(t testing.TB, serverURL, name string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("dbtest: DATABASE_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sharedURL migrates the shared database DATABASE_URL (Migrate takes its own
// lock, so concurrent test processes migrate it once) and returns its URL.
func sharedURL(ctx context.Context, t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatal("dbtest: CRM_TEST_DB=shared needs DATABASE_URL, the database the tests share")
	}
	pool, err := db.Open(ctx, u)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool); err != nil {
		t.Fatalf("dbtest: migrate the shared database: %v", err)
	}
	return u
}

// NewEmptyURL creates a new database without any migration, dropped when the
// test ends, and returns its URL. On a Citus coordinator (the shared database
// of make test-citus is on one) the database is created on every node with the
// citus extension and the workers registered, as an operator would set one up.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := ServerURL(t)
	name := "crm_empty_" + randomHex(6)

	// The nodes of a Citus cluster, when base is its coordinator.
	type node struct {
		Host string `db:"nodename"`
		Port int    `db:"nodeport"`
	}
	var workers []node
	probe, err := db.Open(ctx, base)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	citus, err := db.IsCitus(ctx, probe)
	if err == nil && citus {
		err = probe.SelectContext(ctx, &workers, `SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid`)
	}
	probe.Close()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	coordinator := u.Host
	hosts := []string{coordinator}
	for _, w := range workers {
		hosts = append(hosts, net.JoinHostPort(w.Host, strconv.Itoa(w.Port)))
	}
	onHost := func(host, database string) string {
		v := *u
		v.Host, v.Path = host, "/"+database
		return v.String()
	}
	for _, h := range hosts {
		admin, err := db.Open(ctx, onHost(h, "postgres"))
		if err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		// The name is made here of [a-z0-9_]; CREATE DATABASE takes no parameters.
		_, err = admin.ExecContext(ctx, `CREATE DATABASE `+name)
		admin.Close()
		if err != nil {
			t.Fatalf("dbtest: create %s on %s: %v", name, h, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			admin, err := db.Open(ctx, onHost(h, "postgres"))
			if err != nil {
				t.Errorf("dbtest: drop %s: %v", name, err)
				return
			}
			defer admin.Close()
			if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
				t.Errorf("dbtest: drop %s: %v", name, err)
			}
		})
		if citus {
			pool, err := db.Open(ctx, onHost(h, name))
			if err != nil {
				t.Fatalf("dbtest: %v", err)
			}
			_, err = pool.ExecContext(ctx, `CREATE EXTENSION citus`)
			pool.Close()
			if err != nil {
				t.Fatalf("dbtest: citus in %s on %s: %v", name, h, err)
			}
		}
	}
	if citus {
		coord, err := db.Open(ctx, onHost(coordinator, name))
		if err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		defer coord.Close()
		host, port, _ := net.SplitHostPort(coordinator)
		if _, err := coord.ExecContext(ctx, `SELECT citus_set_coordinator_host($1, $2)`, host, port); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		for _, w := range workers {
			if _, err := coord.ExecContext(ctx, `SELECT citus_add_node($1, $2)`, w.Host, w.Port); err != nil {
				t.Fatalf("dbtest: %v", err)
			}
		}
	}
	return onHost(coordinator, name)
}
