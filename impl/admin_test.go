package impl_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/crmservice/crm/impl"
)

func TestAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	acc, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "Acme", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	dept, err := impl.CreateDepartment(ctx, e.db, acc, "Sales")
	if err != nil {
		t.Fatal(err)
	}
	anna, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "Anna", Login: "Anna@acme.example", Role: impl.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	client, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirCompanyTypes, Name: "Client", Controlled: true})
	if err != nil {
		t.Fatal(err)
	}
	tokenID, _, err := impl.CreateToken(ctx, e.db, anna, "ci", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := impl.RevokeToken(ctx, e.db, tokenID); err != nil {
		t.Fatal(err)
	}
	type rowCounts struct{ Accounts, Departments, Users, Values, Tokens int }
	counts := func() (c rowCounts) {
		t.Helper()
		c.Accounts = e.count(t, `SELECT count(*) FROM accounts`)
		c.Departments = e.count(t, `SELECT count(*) FROM departments`)
		c.Users = e.count(t, `SELECT count(*) FROM users`)
		c.Values = e.count(t, `SELECT count(*) FROM directory_values`)
		c.Tokens = e.count(t, `SELECT count(*) FROM tokens`)
		return c
	}
	stored := counts()
	if n := e.count(t, `SELECT count(*) FROM directory_values WHERE id = $1 AND account_id = $2 AND directory_code = 9 AND name = 'Client' AND is_controlled`, client, acc); n != 1 {
		t.Fatal("directory value not stored")
	}

	for _, tc := range []struct {
		name string
		err  func() error
		code string // of the *impl.Error
		want string // its whole text
	}{
		{"unknown time zone", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "EUR", TimeZone: "Mars/Olympus"})
			return err
		}, "400", `time zone "Mars/Olympus" is unknown: use an IANA name such as Europe/Riga or UTC`},
		{"no time zone", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "EUR"})
			return err
		}, "400", `time zone "" is unknown: use an IANA name such as Europe/Riga or UTC`},
		{"currency too long (22001)", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "euro", TimeZone: "UTC"})
			return err
		}, "400", `base currency "euro" is not an ISO 4217 code of three capital letters, such as EUR`},
		{"currency in lower case (23514)", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "eur", TimeZone: "UTC"})
			return err
		}, "400", `base currency "eur" is not an ISO 4217 code of three capital letters, such as EUR`},
		{"account without a name (23514)", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{BaseCurrency: "EUR", TimeZone: "UTC"})
			return err
		}, "400", "an account needs a name"},
		{"department of a missing account (23503)", func() error {
			_, err := impl.CreateDepartment(ctx, e.db, 987654321, "Sales")
			return err
		}, "404", "no account 987654321"},
		{"department twice (23505)", func() error {
			_, err := impl.CreateDepartment(ctx, e.db, acc, "SALES")
			return err
		}, "409", `account ` + itoa(acc) + ` already has a department named "SALES"`},
		{"unknown role", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: "owner"})
			return err
		}, "400", `role "owner" is not admin, head or member`},
		{"head without department", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: impl.RoleHead})
			return err
		}, "400", "a head needs a department"},
		{"user of a missing account (23503)", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: 987654321, Name: "U", Login: "u@x", Role: impl.RoleMember})
			return err
		}, "404", "no account 987654321"},
		{"user in a missing department (23503)", func() error {
			missing := dept + 1000
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: impl.RoleHead, DepartmentID: &missing})
			return err
		}, "404", "account " + itoa(acc) + " has no department " + itoa(dept+1000)},
		{"same login in another case (23505)", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "anna@ACME.example", Role: impl.RoleMember})
			return err
		}, "409", `account ` + itoa(acc) + ` already has a user with the login "anna@ACME.example"`},
		{"user without a login (23514)", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Role: impl.RoleMember})
			return err
		}, "400", "a user needs a login"},
		{"user with an unknown time zone", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: impl.RoleMember, TimeZone: "Riga"})
			return err
		}, "400", `time zone "Riga" is unknown: use an IANA name such as Europe/Riga or UTC`},
		{"token of a missing user", func() error {
			_, _, err := impl.CreateToken(ctx, e.db, 987654321, "", time.Hour)
			return err
		}, "404", "no user 987654321"},
		{"revoke a missing token", func() error { return impl.RevokeToken(ctx, e.db, 987654321) }, "404", "no token 987654321"},
		{"revoke twice", func() error { return impl.RevokeToken(ctx, e.db, tokenID) }, "409", "token " + itoa(tokenID) + " is already revoked"},
		{"controlled document type", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirDocumentTypes, Name: "X", Controlled: true})
			return err
		}, "400", "only counterparty types (directory 9) can be controlled"},
		{"unknown directory (23514)", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: 7, Name: "X"})
			return err
		}, "400", "there is no directory 7: the codes are 9, 10, 29, 35, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49"},
		{"directory code beyond smallint (22003)", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: 70000, Name: "X"})
			return err
		}, "400", "there is no directory 70000: the codes are 9, 10, 29, 35, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49"},
		{"duplicate directory value (23505)", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirCompanyTypes, Name: "Client"})
			return err
		}, "409", `directory 9 already has the value "Client"`},
		{"directory value of a missing account (23503)", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: 987654321, Code: impl.DirCompanyTypes, Name: "Client"})
			return err
		}, "404", "no account 987654321"},
		{"directory value without a name (23514)", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirCompanyTypes})
			return err
		}, "400", "a directory value needs a name"},
		{"activate an active user", func() error { return impl.SetUserActive(ctx, e.db, anna, true) }, "409", "user " + itoa(anna) + " is already active"},
		{"deactivate a missing user", func() error { return impl.SetUserActive(ctx, e.db, 987654321, false) }, "404", "no user 987654321"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var apiErr *impl.Error
			if !errors.As(err, &apiErr) || apiErr.Code != tc.code || err.Error() != tc.want {
				t.Fatalf("err %v (%T), want code %s %q", err, err, tc.code, tc.want)
			}
			var pqErr *pq.Error
			if errors.As(err, &pqErr) {
				t.Errorf("the driver's error is reachable from %q", err)
			}
		})
	}
	if after := counts(); after != stored {
		t.Errorf("refused operations changed the counts from %+v to %+v", stored, after)
	}
}

func TestAdminUnknownRefusal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// A name longer than the B-tree index on directory_values (lower(name))
	// can hold: a refusal that no admin rule names.
	acc, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "Acme", BaseCurrency: "EUR", TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	long := make([]byte, 20000)
	for i := range long {
		long[i] = byte('a' + rng.IntN(26)) // random, so that compression cannot make it fit
	}
	_, err = impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirCompanyTypes, Name: string(long)})
	want := "add directory value: the database refused it (program limit exceeded, SQLSTATE 54000)"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "54000" {
		t.Errorf("the driver's error is not kept for the logs: %#v", err)
	}
}

func TestUserActive(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	ctx := context.Background()
	okStatus := func(t *testing.T, token string) {
		t.Helper()
		if r := httpRequest(t, e, http.MethodGet, "/directory/9", "Bearer "+token); r.HTTPStatus != http.StatusOK || r.Status != "success" {
			t.Fatalf("want HTTP 200 success, got %d\n%s", r.HTTPStatus, r.Raw)
		}
	}
	okStatus(t, w.member.token)
	okStatus(t, w.peer.token)

	if err := impl.SetUserActive(ctx, e.db, w.member.id, false); err != nil {
		t.Fatal(err)
	}
	r := httpRequest(t, e, http.MethodGet, "/directory/9", "Bearer "+w.member.token)
	if r.HTTPStatus != http.StatusUnauthorized || r.code() != "401" || r.errorText() != "unknown, expired or revoked token" {
		t.Fatalf("a deactivated user's token: want HTTP 401, got %d\n%s", r.HTTPStatus, r.Raw)
	}
	okStatus(t, w.peer.token) // others are not touched
	if n := e.count(t, `SELECT count(*) FROM users WHERE id = $1 AND account_id = $2 AND NOT active`, w.member.id, w.accountID); n != 1 {
		t.Error("user not stored as deactivated")
	}
	if err := impl.SetUserActive(ctx, e.db, w.member.id, false); err == nil || err.Error() != "user "+itoa(w.member.id)+" is already deactivated" {
		t.Errorf("deactivating twice: %v", err)
	}
	if _, _, err := impl.CreateToken(ctx, e.db, w.member.id, "", 0); err == nil ||
		err.Error() != "user "+itoa(w.member.id)+" is deactivated: activate them first" {
		t.Errorf("a token of a deactivated user: %v", err)
	}

	if err := impl.SetUserActive(ctx, e.db, w.member.id, true); err != nil {
		t.Fatal(err)
	}
	okStatus(t, w.member.token)
}
