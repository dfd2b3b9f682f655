package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// command runs crm-server with args and returns what it printed.
func command(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), &out, args)
	return out.String(), err
}

func mustCommand(t *testing.T, args ...string) string {
	t.Helper()
	out, err := command(t, args...)
	if err != nil {
		t.Fatalf("crm-server %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out)
}

func TestAdminCommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	account := mustCommand(t, "account", "create", "-name", "Acme", "-currency", "EUR", "-tz", "Europe/Riga")
	dept := mustCommand(t, "department", "create", "-account", account, "-name", "Sales")
	user := mustCommand(t, "user", "create", "-account", account, "-name", "Hanna Head", "-login", "hanna@acme.example",
		"-role", "head", "-department", dept, "-kpi-users", "-tz", "Europe/Helsinki")
	var got struct {
		Role     string `db:"role"`
		Dept     int64  `db:"department_id"`
		KPIUsers bool   `db:"kpi_users_report"`
		KPIDepts bool   `db:"kpi_departments_report"`
		TimeZone string `db:"time_zone"`
	}
	if err := pool.Get(&got, `SELECT role, department_id, kpi_users_report, kpi_departments_report, time_zone FROM users WHERE id = $1`, user); err != nil {
		t.Fatal(err)
	}
	if got.Role != "head" || !got.KPIUsers || got.KPIDepts || got.TimeZone != "Europe/Helsinki" {
		t.Errorf("user stored as %+v", got)
	}

	out := mustCommand(t, "token", "create", "-user", user, "-label", "ci", "-ttl", "1h")
	m := regexp.MustCompile(`^token (\d+) \(shown only now\): (crm_\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("token create printed %q", out)
	}
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM tokens WHERE id = $1 AND hash = $2 AND label = 'ci' AND expires_at > now()`, m[1], impl.HashToken(m[2])); err != nil || n != 1 {
		t.Fatalf("token not stored by its hash (%v)", err)
	}
	mustCommand(t, "token", "revoke", "-id", m[1])
	if err := pool.Get(&n, `SELECT count(*) FROM tokens WHERE id = $1 AND revoked_at IS NOT NULL`, m[1]); err != nil || n != 1 {
		t.Fatalf("token not revoked (%v)", err)
	}

	value := mustCommand(t, "directory", "add", "-account", account, "-code", "9", "-name", "Client", "-controlled", "-sort", "2")
	if err := pool.Get(&n, `SELECT count(*) FROM directory_values WHERE id = $1 AND directory_code = 9 AND is_controlled AND sort = 2`, value); err != nil || n != 1 {
		t.Fatalf("directory value not stored (%v)", err)
	}

	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"user", "create", "-account", account, "-name", "X", "-login", "x@acme.example", "-role", "owner"},
		{"token", "create", "-user", "987654321"},
		{"account", "create", "-name", "X", "-tz", "Nowhere/Else"},
		{"token", "create", "-nonsense"},
	} {
		if _, err := command(t, args...); err == nil {
			t.Errorf("crm-server %s succeeded", strings.Join(args, " "))
		}
	}
}

func TestServeRefusesStaleSchema(t *testing.T) {
	dbtest.RequireOwnDatabase(t)
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	if _, err := command(t, "serve", "-addr", "127.0.0.1:0"); !errors.Is(err, db.ErrStaleSchema) {
		t.Fatalf("serve on a stale schema: %v, want ErrStaleSchema", err)
	}
	if _, err := command(t, "account", "create", "-name", "X", "-tz", "UTC"); !errors.Is(err, db.ErrStaleSchema) {
		t.Fatalf("an admin command on a stale schema: %v, want ErrStaleSchema", err)
	}
}
