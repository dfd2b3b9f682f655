package db

import (
	"context"
	"fmt"
	neturl "net/url"

	"github.com/jmoiron/sqlx"
)

// On a database where the citus extension is installed, Migrate distributes the
// schema (docs/scale-out.md):
//
//   - accounts by its id, and every table with an account_id column by it,
//     co-located with accounts, so that an account's rows of every table live on
//     one node and join there;
//   - every other table of the schema (legacy_tokens) as a reference table,
//     copied to every node;
//   - schema_migrations and schema_functions stay on the coordinator: only
//     migrations read them.
//
// The same migration files serve plain PostgreSQL, where this does nothing.

// IsCitus reports whether the citus extension is installed in the database.
func IsCitus(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	var citus bool
	if err := sqlx.GetContext(ctx, q, &citus, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`); err != nil {
		return false, fmt.Errorf("look for the citus extension: %w", err)
	}
	return citus, nil
}

// undistributedTables selects the names of the schema's tables that Citus does
// not know yet (schema_migrations and schema_functions excepted).
const undistributedTables = `
	SELECT c.relname::text
	  FROM pg_class c
	  JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('schema_migrations', 'schema_functions')
	   AND NOT c.relispartition
	   AND NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)`

// distribute hands every table Citus does not know yet to it: accounts first,
// then each table once every table its foreign keys reference is known.
func distribute(ctx context.Context, tx *sqlx.Tx) error {
	for {
		var next []struct {
			Name       string `db:"name"`
			HasAccount bool   `db:"has_account"`
		}
		err := tx.SelectContext(ctx, &next, `
			SELECT t.relname AS name,
			       EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'account_id' AND NOT a.attisdropped) AS has_account
			  FROM pg_class t
			 WHERE t.relname IN (`+undistributedTables+`) AND t.relnamespace = 'public'::regnamespace
			   AND NOT EXISTS (
			       SELECT FROM pg_constraint k
			        WHERE k.conrelid = t.oid AND k.contype = 'f' AND k.confrelid <> t.oid
			          AND NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = k.confrelid))
			 ORDER BY t.relname <> 'accounts', t.relname`)
		if err != nil {
			return fmt.Errorf("find tables to distribute: %w", err)
		}
		if len(next) == 0 {
			return checkDistributed(ctx, tx)
		}
		for _, t := range next {
			var stmt string
			switch {
			case t.Name == "accounts":
				stmt = `SELECT create_distributed_table('accounts', 'id')`
			case t.HasAccount:
				stmt = `SELECT create_distributed_table($1, 'account_id', colocate_with => 'accounts')`
			default:
				stmt = `SELECT create_reference_table($1)`
			}
			args := []any{t.Name}
			if t.Name == "accounts" {
				args = nil
			}
			if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
				return fmt.Errorf("distribute table %s: %w", t.Name, err)
			}
		}
	}
}

// checkDistributed fails when a table is left that distribute could not hand
// to Citus (its foreign keys reference a table outside the schema's order).
func checkDistributed(ctx context.Context, tx *sqlx.Tx) error {
	var left []string
	if err := tx.SelectContext(ctx, &left, undistributedTables); err != nil {
		return fmt.Errorf("check distribution: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("tables left undistributed: %v", left)
	}
	return nil
}

// SingleShardURL returns url with the Citus setting under which a statement
// that would run on more than one shard fails instead of running
// (citus.multi_task_query_log_level=error). The tests on Citus serve requests
// through it, to prove that every statement of a request routes to one shard.
func SingleShardURL(url string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	q.Set("citus.multi_task_query_log_level", "error") // lib/pq sends unknown keys as session settings
	u.RawQuery = q.Encode()
	return u.String(), nil
}
