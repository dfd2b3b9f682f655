package db

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/jmoiron/sqlx"
)

// The hot operations run as PL/pgSQL functions of single-table statements
// (docs/scale-out.md, "Functions of fast-path statements"): one round trip
// per request, plans kept by the session, and on Citus the shape its planner
// caches and a worker runs on its own shards. Their definitions live in
// db/functions, one file per operation, named after it (company_get.sql holds
// crm_company_get, the statement of GET /company/get).
//
// A function file is not a migration: it always holds the current definition.
// Migrate applies a file again whenever its text changed since it was last
// applied (each file's SHA-256 is kept in schema_functions), after the
// migrations, so a file may use every table and type they create. A file must
// therefore be safe to run again: CREATE OR REPLACE FUNCTION, and a DROP
// FUNCTION IF EXISTS first where a signature changes. A function whose
// arguments or result change incompatibly takes a new name, so that servers of
// the previous release still running during an upgrade keep theirs.
//
// Every function of the files is named crm_something. On Citus each exists on
// every node, and one whose first argument is p_account is distributed by it, co-located with accounts
// and delegated even inside a transaction (force_delegation): a call that
// reaches a node that does not hold the account runs where the account is.

//go:embed functions/*.sql
var functionFiles embed.FS

// FunctionFile is one embedded file of db/functions.
type FunctionFile struct {
	Name string // the file name, such as "company_get.sql"
	SQL  string
	Hash string // hex SHA-256 of SQL
}

// FunctionFiles returns the embedded function files in name order.
func FunctionFiles() ([]FunctionFile, error) {
	entries, err := fs.ReadDir(functionFiles, "functions")
	if err != nil {
		return nil, fmt.Errorf("read embedded functions: %w", err)
	}
	var files []FunctionFile
	for _, e := range entries {
		body, err := fs.ReadFile(functionFiles, path.Join("functions", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read function file %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(body)
		files = append(files, FunctionFile{Name: e.Name(), SQL: string(body), Hash: hex.EncodeToString(sum[:])})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

const createSchemaFunctions = `CREATE TABLE IF NOT EXISTS schema_functions (
	name       text PRIMARY KEY,
	sha256     text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now())`

// applyFunctions applies, in tx, the function files whose text differs from
// the one recorded in schema_functions, and on Citus distributes the
// functions they define. It returns the names of the files it applied.
func applyFunctions(ctx context.Context, tx *sqlx.Tx, citus bool) ([]string, error) {
	files, err := FunctionFiles()
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, createSchemaFunctions); err != nil {
		return nil, fmt.Errorf("create schema_functions: %w", err)
	}
	recorded, err := recordedFunctions(ctx, tx)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, f := range files {
		if recorded[f.Name] == f.Hash {
			continue
		}
		for _, stmt := range statements(f.SQL) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return done, fmt.Errorf("apply function file %s: %w\n%s", f.Name, err, firstLines(stmt, 3))
			}
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO schema_functions (name, sha256) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, applied_at = now()`, f.Name, f.Hash); err != nil {
			return done, fmt.Errorf("record function file %s: %w", f.Name, err)
		}
		done = append(done, "functions/"+f.Name)
	}
	if citus {
		if err := distributeFunctions(ctx, tx); err != nil {
			return done, err
		}
	}
	return done, nil
}

// recordedFunctions returns the hash recorded for each applied function file.
func recordedFunctions(ctx context.Context, q sqlx.QueryerContext) (map[string]string, error) {
	var rows []struct {
		Name string `db:"name"`
		Hash string `db:"sha256"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT name, sha256 FROM schema_functions`); err != nil {
		return nil, fmt.Errorf("read schema_functions: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Hash
	}
	return out, nil
}

// staleFunctions returns the names of the embedded function files that the
// database lacks or holds in another version.
func staleFunctions(ctx context.Context, q sqlx.QueryerContext) ([]string, error) {
	files, err := FunctionFiles()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := sqlx.GetContext(ctx, q, &exists, `SELECT to_regclass('schema_functions') IS NOT NULL`); err != nil {
		return nil, fmt.Errorf("check functions: %w", err)
	}
	recorded := map[string]string{}
	if exists {
		if recorded, err = recordedFunctions(ctx, q); err != nil {
			return nil, err
		}
	}
	var stale []string
	for _, f := range files {
		if recorded[f.Name] != f.Hash {
			stale = append(stale, "functions/"+f.Name)
		}
	}
	return stale, nil
}

// distributeFunctions hands to Citus each function of the files (their names
// begin with crm_) whose first argument is p_account and that it does not distribute by it yet:
// distributed by that argument, co-located with accounts, and delegated to
// the account's node even inside a transaction. (Citus creates every other
// function and type on the workers by itself.)
func distributeFunctions(ctx context.Context, tx *sqlx.Tx) error {
	var names []string
	if err := tx.SelectContext(ctx, &names, `
		SELECT p.oid::regprocedure::text
		  FROM pg_proc p
		 WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'crm\_%' AND p.proargnames[1] = 'p_account'
		   AND NOT EXISTS (SELECT FROM pg_dist_object d
		                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
		                      AND d.distribution_argument_index IS NOT NULL)
		 ORDER BY 1`); err != nil {
		return fmt.Errorf("find functions to distribute: %w", err)
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, `SELECT create_distributed_function($1, 'p_account', colocate_with => 'accounts', force_delegation => true)`, name); err != nil {
			return fmt.Errorf("distribute function %s: %w", name, err)
		}
	}
	return nil
}

// functionsFingerprint adds the function files to a fingerprint of the schema.
func functionsFingerprint(h interface{ Write([]byte) (int, error) }) error {
	files, err := FunctionFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(h, "functions/%s\x00%s\x00", f.Name, f.SQL)
	}
	return nil
}
