package db_test

import (
	"context"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestCitusDistribution checks, on a database where citus is installed (make
// test-citus), that the migrations left every table where docs/scale-out.md
// says: accounts by id, every table with account_id by it and co-located with
// accounts, the others reference tables, and nothing local but
// schema_migrations. On plain PostgreSQL it checks that migrating changed
// nothing of the kind: no citus, so nothing to distribute.
func TestCitusDistribution(t *testing.T) {
	pool := dbtest.New(t)
	ctx := context.Background()
	citus, err := db.IsCitus(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !citus {
		t.Skip("the database has no citus extension: make test-citus runs this test")
	}
	var tables []struct {
		Name       string  `db:"name"`
		HasAccount bool    `db:"has_account"`
		Method     *string `db:"method"`
		Column     *string `db:"dist_column"`
		Colocated  bool    `db:"colocated"`
	}
	err = pool.SelectContext(ctx, &tables, `
		SELECT c.relname AS name,
		       EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'account_id' AND NOT a.attisdropped) AS has_account,
		       p.partmethod::text AS method,
		       CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS dist_column,
		       coalesce(p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'accounts'::regclass), false) AS colocated
		  FROM pg_class c
		  JOIN pg_namespace n ON n.oid = c.relnamespace
		  LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
		 WHERE n.nspname = 'public' AND c.relkind = 'r'
		 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables", len(tables))
	}
	for _, tb := range tables {
		method, column := "local", ""
		if tb.Method != nil {
			method = *tb.Method
		}
		if tb.Column != nil {
			column = *tb.Column
		}
		switch {
		case tb.Name == "schema_migrations" || tb.Name == "schema_functions":
			if method != "local" {
				t.Errorf("%s is %s, want local to the coordinator", tb.Name, method)
			}
		case tb.Name == "accounts":
			if method != "h" || column != "id" {
				t.Errorf("accounts: %s by %q, want hash by id", method, column)
			}
		case tb.HasAccount:
			if method != "h" || column != "account_id" || !tb.Colocated {
				t.Errorf("%s: %s by %q (co-located with accounts: %t), want hash by account_id, co-located", tb.Name, method, column, tb.Colocated)
			}
		default:
			if method != "n" {
				t.Errorf("%s (no account_id): %s, want a reference table", tb.Name, method)
			}
		}
	}
}
