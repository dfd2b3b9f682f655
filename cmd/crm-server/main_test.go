package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// command runs crm-server with args and returns what it printed on standard output.
func command(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return commandIn(t, "", args...)
}

// commandIn runs crm-server with stdin as its standard input.
func commandIn(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	err := run(context.Background(), log, streams{in: strings.NewReader(stdin), out: &out, err: io.Discard}, args)
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

// failing checks that crm-server args fails with exactly want and prints nothing.
func failing(t *testing.T, want string, args ...string) {
	t.Helper()
	out, err := command(t, args...)
	if err == nil || err.Error() != want || out != "" {
		t.Errorf("crm-server %s: printed %q, error %v\nwant the error %q", strings.Join(args, " "), out, err, want)
	}
}

func TestAdminCommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	account := mustCommand(t, "account", "create", "--name", "Acme", "--currency", "EUR", "--tz", "Europe/Riga")
	dept := mustCommand(t, "department", "create", "--account", account, "--name", "Sales")
	user := mustCommand(t, "user", "create", "--account", account, "--name", "Hanna Head", "--login", "hanna@acme.example",
		"--role", "head", "--department", dept, "--kpi-users", "--tz", "Europe/Helsinki")
	var got struct {
		Account  string `db:"account_id"`
		Name     string `db:"name"`
		Login    string `db:"login"`
		Role     string `db:"role"`
		Dept     string `db:"department_id"`
		KPIUsers bool   `db:"kpi_users_report"`
		KPIDepts bool   `db:"kpi_departments_report"`
		TimeZone string `db:"time_zone"`
		Active   bool   `db:"active"`
	}
	if err := pool.Get(&got, `SELECT account_id, name, login, role, department_id, kpi_users_report, kpi_departments_report, time_zone, active
		FROM users WHERE id = $1`, user); err != nil {
		t.Fatal(err)
	}
	if got.Account != account || got.Name != "Hanna Head" || got.Login != "hanna@acme.example" || got.Role != "head" || got.Dept != dept ||
		!got.KPIUsers || got.KPIDepts || got.TimeZone != "Europe/Helsinki" || !got.Active {
		t.Errorf("user stored as %+v", got)
	}

	out := mustCommand(t, "token", "create", "--user", user, "--label", "ci", "--ttl", "1h")
	m := regexp.MustCompile(`^token (\d+) \(shown only now\): (crm_\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("token create printed %q", out)
	}
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM tokens WHERE id = $1 AND account_id = $2 AND user_id = $3 AND hash = $4 AND label = 'ci'
		AND expires_at BETWEEN now() + interval '59 minutes' AND now() + interval '1 hour'`, m[1], account, user, impl.HashToken(m[2])); err != nil || n != 1 {
		t.Fatalf("token not stored by its hash (%v)", err)
	}
	mustCommand(t, "token", "revoke", "--id", m[1])
	if err := pool.Get(&n, `SELECT count(*) FROM tokens WHERE id = $1 AND revoked_at IS NOT NULL`, m[1]); err != nil || n != 1 {
		t.Fatalf("token not revoked (%v)", err)
	}

	value := mustCommand(t, "directory", "add", "--account", account, "--code", "9", "--name", "Client", "--controlled", "--sort", "2")
	if err := pool.Get(&n, `SELECT count(*) FROM directory_values WHERE id = $1 AND account_id = $2 AND directory_code = 9 AND name = 'Client'
		AND is_controlled AND NOT is_invoice AND sort = 2`, value, account); err != nil || n != 1 {
		t.Fatalf("directory value not stored (%v)", err)
	}

	t.Run("-o json", func(t *testing.T) {
		out, err := command(t, "department", "create", "--account", account, "--name", "Support", "-o", "json")
		var id int64
		if err != nil || pool.Get(&id, `SELECT id FROM departments WHERE account_id = $1 AND name = 'Support'`, account) != nil ||
			out != `{"id":`+itoa(id)+"}\n" {
			t.Errorf("department create -o json printed %q, %v", out, err)
		}
		out, err = command(t, "token", "create", "--user", user, "--output", "json")
		m := regexp.MustCompile(`^\{"id":(\d+),"token":"(crm_[0-9A-Za-z_]+)"\}\n$`).FindStringSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("token create -o json printed %q, %v", out, err)
		}
		if err := pool.Get(&n, `SELECT count(*) FROM tokens WHERE id = $1 AND hash = $2 AND expires_at IS NULL AND revoked_at IS NULL`,
			m[1], impl.HashToken(m[2])); err != nil || n != 1 {
			t.Errorf("the token printed as JSON is not stored (%v)", err)
		}
		for _, args := range [][]string{
			{"account", "create", "--name", "Beta", "--tz", "UTC", "-o", "json"},
			{"user", "create", "--account", account, "--name", "Mia", "--login", "mia@acme.example", "-o", "json"},
			{"directory", "add", "--account", account, "--code", "44", "--name", "Invoice", "--invoice", "-o", "json"},
		} {
			if out, err := command(t, args...); err != nil || !regexp.MustCompile(`^\{"id":[1-9][0-9]*\}\n$`).MatchString(out) {
				t.Errorf("crm-server %s printed %q, %v", strings.Join(args, " "), out, err)
			}
		}
	})

	t.Run("user deactivate and activate", func(t *testing.T) {
		active := func() (a bool) {
			t.Helper()
			if err := pool.Get(&a, `SELECT active FROM users WHERE id = $1`, user); err != nil {
				t.Fatal(err)
			}
			return a
		}
		if out := mustCommand(t, "user", "deactivate", "--id", user); out != "" || active() {
			t.Fatalf("deactivate printed %q; active %t", out, active())
		}
		failing(t, "user "+user+" is already deactivated", "user", "deactivate", "--id", user)
		failing(t, "user "+user+" is deactivated: activate them first", "token", "create", "--user", user)
		if out := mustCommand(t, "user", "activate", "--id", user); out != "" || !active() {
			t.Fatalf("activate printed %q; active %t", out, active())
		}
	})

	t.Run("errors", func(t *testing.T) {
		before := map[string]int{}
		tables := []string{"accounts", "departments", "users", "tokens", "directory_values"}
		for _, table := range tables {
			before[table] = countRows(t, pool, table)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"user", "create", "--account", account, "--name", "X", "--login", "x@acme.example", "--role", "owner"},
				`role "owner" is not admin, head or member`},
			{[]string{"user", "create", "--account", account, "--name", "X", "--login", "HANNA@acme.example"},
				`account ` + account + ` already has a user with the login "HANNA@acme.example"`},
			{[]string{"user", "create", "--account", "987654321", "--name", "X", "--login", "x@acme.example"}, "no account 987654321"},
			{[]string{"user", "deactivate", "--id", "987654321"}, "no user 987654321"},
			{[]string{"token", "create", "--user", "987654321"}, "no user 987654321"},
			{[]string{"token", "revoke", "--id", m[1]}, "token " + m[1] + " is already revoked"},
			{[]string{"account", "create", "--name", "X", "--tz", "Nowhere/Else"},
				`time zone "Nowhere/Else" is unknown: use an IANA name such as Europe/Riga or UTC`},
			{[]string{"account", "create", "--name", "X", "--tz", "UTC", "--currency", "euro"},
				`base currency "euro" is not an ISO 4217 code of three capital letters, such as EUR`},
			{[]string{"department", "create", "--account", account, "--name", "sales"}, `account ` + account + ` already has a department named "sales"`},
			{[]string{"directory", "add", "--account", account, "--code", "9", "--name", "Client"}, `directory 9 already has the value "Client"`},
			{[]string{"directory", "add", "--account", account, "--code", "7", "--name", "X"},
				"there is no directory 7: the codes are 9, 10, 29, 35, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49"},
			{[]string{"token", "create", "--nonsense"}, "token create: unknown flag: --nonsense (see crm-server token create --help)"},
			{[]string{"token", "create", "-user", user}, "token create: flags take two dashes: --user, not -user (see crm-server token create --help)"},
			{[]string{"token", "create", "--account", account}, "token create: unknown flag: --account (see crm-server token create --help)"},
			{[]string{"token", "create", "--ttl", "a month", "--user", user},
				`token create: invalid argument "a month" for "--ttl" flag: time: invalid duration "a month" (see crm-server token create --help)`},
			{[]string{"token", "create"}, "token create: --user is required (see crm-server token create --help)"},
			{[]string{"user", "create", "--name", "X"}, "user create: --account and --login are required (see crm-server user create --help)"},
			{[]string{"token", "create", "--user", user, "-o", "yaml"},
				`token create: invalid argument "yaml" for "-o, --output" flag: want text or json (see crm-server token create --help)`},
			{[]string{"token", "revoke", "--id", m[1], "-o", "json"}, "token revoke: unknown shorthand flag: 'o' in -o (see crm-server token revoke --help)"},
			{[]string{"token", "create", user}, `token create takes only flags, not "` + user + `" (see crm-server token create --help)`},
			{[]string{}, "name a command: account, completion, contact-social, db, demo, department, directory, field, filter, kpi, mail-account, migrate, money-account, serve, token, user (see crm-server --help)"},
			{[]string{"frobnicate"}, `unknown command "frobnicate" for "crm-server"`},
			{[]string{"toke", "create"}, `unknown command "toke" for "crm-server": did you mean "token"?`},
			{[]string{"token"}, "token needs a command: create, list, revoke (see crm-server token --help)"},
			{[]string{"token", "frobnicate"}, `unknown command "frobnicate" for "crm-server token"`},
		} {
			failing(t, tc.want, tc.args...)
		}
		for _, table := range tables {
			if n := countRows(t, pool, table); n != before[table] {
				t.Errorf("%d rows in %s after refused commands, want %d", n, table, before[table])
			}
		}
	})
}

func countRows(t *testing.T, pool interface {
	Get(dest any, query string, args ...any) error
}, table string) int {
	t.Helper()
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM `+table); err != nil {
		t.Fatal(err)
	}
	return n
}

// countAccountRows counts the rows of table that belong to account: under
// make test-citus the packages share one database, so whole-table counts move
// with other packages' tests.
func countAccountRows(t *testing.T, pool interface {
	Get(dest any, query string, args ...any) error
}, table, account string) int {
	t.Helper()
	var n int
	if err := pool.Get(&n, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, account); err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

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
	if _, err := command(t, "serve", "--addr", "127.0.0.1:0"); !errors.Is(err, db.ErrStaleSchema) {
		t.Fatalf("serve on a stale schema: %v, want ErrStaleSchema", err)
	}
	if _, err := command(t, "account", "create", "--name", "X", "--tz", "UTC"); !errors.Is(err, db.ErrStaleSchema) {
		t.Fatalf("an admin command on a stale schema: %v, want ErrStaleSchema", err)
	}
}

func TestDatabaseRefusals(t *testing.T) {
	server, err := neturl.Parse(dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	noDatabase := *server
	noDatabase.Path = "/crm_no_such_database"
	noRole := *server
	noRole.User = neturl.User("crm_no_such_role")
	for _, tc := range []struct {
		url  *neturl.URL
		args []string
		want string
	}{
		{&noDatabase, []string{"account", "create", "--name", "X", "--tz", "UTC"}, "the database does not exist (SQLSTATE 3D000)"},
		{&noDatabase, []string{"serve", "--addr", "127.0.0.1:0"}, "the database does not exist (SQLSTATE 3D000)"},
		{&noRole, []string{"kpi", "list", "--user", "1"}, "the database server refused the user or password (SQLSTATE 28000)"},
	} {
		t.Setenv("DATABASE_URL", tc.url.String())
		failing(t, tc.want, tc.args...)
	}
}
