package impl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
)

func TestAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	acc, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "Acme", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"unknown time zone", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "EUR", TimeZone: "Mars/Olympus"})
			return err
		}, "time zone"},
		{"bad currency", func() error {
			_, err := impl.CreateAccount(ctx, e.db, impl.AccountInput{Name: "X", BaseCurrency: "euro", TimeZone: "UTC"})
			return err
		}, "create account"},
		{"unknown role", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: "owner"})
			return err
		}, "role"},
		{"head without department", func() error {
			_, err := impl.CreateUser(ctx, e.db, impl.UserInput{AccountID: acc, Name: "U", Login: "u@x", Role: impl.RoleHead})
			return err
		}, "department"},
		{"token of a missing user", func() error {
			_, _, err := impl.CreateToken(ctx, e.db, 987654321, "", time.Hour)
			return err
		}, "no active user"},
		{"controlled document type", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: impl.DirDocumentTypes, Name: "X", Controlled: true})
			return err
		}, "controlled"},
		{"unknown directory", func() error {
			_, err := impl.AddDirectoryValue(ctx, e.db, impl.DirectoryValueInput{AccountID: acc, Code: 7, Name: "X"})
			return err
		}, "add directory value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	t.Run("same login twice", func(t *testing.T) {
		in := impl.UserInput{AccountID: acc, Name: "U", Login: "Same@x.example", Role: impl.RoleMember}
		if _, err := impl.CreateUser(ctx, e.db, in); err != nil {
			t.Fatal(err)
		}
		in.Login = "same@X.example"
		if _, err := impl.CreateUser(ctx, e.db, in); err == nil {
			t.Fatal("a second user with the same login (other case) was created")
		}
	})
}
