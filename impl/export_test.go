package impl

import (
	"context"
	"database/sql"
)

// Redis clients for the tests of package impl_test: see testRedis and closedRedis.
var (
	OpenTestRedis   = testRedis
	OpenClosedRedis = closedRedis
)

// SetStatementTimeout is setStatementTimeout, for the tests of deadlines.
func SetStatementTimeout(ctx context.Context, tx *sql.Tx) error {
	return setStatementTimeout(ctx, tx)
}

// Unavailable reports the 503 envelope that err is answered with (nil: none).
func Unavailable(err error) *Error { return unavailable(err) }
