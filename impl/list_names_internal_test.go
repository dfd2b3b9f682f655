package impl

import (
	"context"
	"testing"

	"github.com/crmservice/crm/db/dbtest"
)

// TestCompanyNamesFollowCompanies checks that company_names, from which the
// counterparty list filtered by name takes its total and page, holds exactly
// the live counterparties with their owner and lower-cased name after each
// kind of write, in the writing transaction.
func TestCompanyNamesFollowCompanies(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	acc, err := CreateAccount(ctx, db, AccountInput{Name: "names", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	typeID := addType(t, db, acc)
	var users []int64
	for _, login := range []string{"a", "b"} {
		id, err := CreateUser(ctx, db, UserInput{AccountID: acc, Name: login, Login: login + "@names.example", Role: RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, id)
	}
	var ids []int64
	err = db.Select(&ids, `
		INSERT INTO companies (account_id, name, user_id, type_id, deleted_at)
		SELECT $1, n, $2, $3, d
		  FROM (VALUES ('Nordic ÄBOLS', NULL::timestamptz), ('Zephyr', NULL), ('Born deleted', now())) AS v (n, d)
		RETURNING id`, acc, users[0], typeID)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		var bad []string
		err := db.Select(&bad, `
			SELECT coalesce(c.id, s.id) || ': ' || coalesce(c.user_id || ' ' || lower(c.name), 'none') || ' kept as ' || coalesce(s.user_id || ' ' || s.name_lc, 'none')
			  FROM (SELECT * FROM companies WHERE account_id = $1 AND deleted_at IS NULL) c
			  FULL JOIN (SELECT * FROM company_names WHERE account_id = $1) s ON s.id = c.id
			 WHERE c.id IS NULL OR s.id IS NULL OR s.user_id <> c.user_id OR s.name_lc <> lower(c.name)`, acc)
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Errorf("%s: %v", step, bad)
		}
	}
	check("inserted")
	for _, step := range []struct{ name, sql string }{
		{"renamed", `UPDATE companies SET name = 'NORDIC Ābols' WHERE account_id = $1 AND id = $2 AND $3 > 0`},
		{"owner changed", `UPDATE companies SET user_id = $3 WHERE account_id = $1 AND id = $2`},
		{"another column changed", `UPDATE companies SET note = 'x' WHERE account_id = $1 AND id = $2 AND $3 > 0`},
		{"deleted", `UPDATE companies SET deleted_at = now() WHERE account_id = $1 AND id = $2 AND $3 > 0`},
		{"renamed while deleted", `UPDATE companies SET name = 'Gone' WHERE account_id = $1 AND id = $2 AND $3 > 0`},
		{"restored", `UPDATE companies SET deleted_at = NULL WHERE account_id = $1 AND id = $2 AND $3 > 0`},
		{"removed", `DELETE FROM companies WHERE account_id = $1 AND id = $2::bigint + 1 AND $3 > 0`},
	} {
		if _, err := db.Exec(step.sql, acc, ids[0], users[1]); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		check(step.name)
	}
}
