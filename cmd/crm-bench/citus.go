package main

import (
	"context"
	"net/url"

	"github.com/crmservice/crm/db"
)

// storedKey is the size key of the data set in the database at u, "" when none.
func storedKey(ctx context.Context, u string) (string, error) {
	pool, err := db.Open(ctx, u)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	var key string
	err = pool.GetContext(ctx, &key, `SELECT key FROM bench_meta`)
	return key, err
}

// sibling returns the URL of the database name on the server of u, creating
// it when missing.
func sibling(ctx context.Context, u, name string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	parsed.Path = "/postgres"
	admin, err := db.Open(ctx, parsed.String())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var exists bool
	if err := admin.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		return "", err
	}
	if !exists {
		// name is one of this file's constants.
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
			return "", err
		}
	}
	parsed.Path = "/" + name
	return parsed.String(), nil
}
