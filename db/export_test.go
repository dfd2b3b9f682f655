package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// MigrateList applies the migrations of ms as Migrate applies the embedded
// ones, so that tests can run migrations of their own.
func MigrateList(ctx context.Context, db *sqlx.DB, ms []Migration) ([]string, error) {
	return migrate(ctx, db, ms)
}

// NewMigration returns the migration of a file's version, name and text, as
// Migrations reads it (NoTransactionMarker included).
func NewMigration(version int, name, sql string) Migration {
	return newMigration(version, name, sql)
}
