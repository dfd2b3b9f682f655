package impl

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
)

// The admin listings: what crm-server account list, department list, user
// list and token list print. Like the other admin operations they are
// operator actions outside the API; a listing of one account names it as a
// parameter of every statement, and the listings across accounts (accounts,
// every token) say so.

// AccountRow is an account as account list shows it.
type AccountRow struct {
	ID           int64     `db:"id"`
	Name         string    `db:"name"`
	BaseCurrency string    `db:"base_currency"`
	TimeZone     string    `db:"time_zone"`
	Users        int       `db:"users"`  // active users
	Tokens       int       `db:"tokens"` // valid tokens: not revoked, not expired
	CreatedAt    time.Time `db:"created_at"`
}

// ListAccounts lists every account, oldest first.
func ListAccounts(ctx context.Context, db *sqlx.DB) ([]AccountRow, error) {
	out := []AccountRow{}
	// cross-account: the operator's list of accounts (on Citus the counts
	// are grouped by account_id, joined on it, so each shard counts its own)
	err := db.SelectContext(ctx, &out, `
		SELECT a.id, a.name, a.base_currency, a.time_zone, a.created_at,
		       coalesce(u.n, 0) AS users, coalesce(t.n, 0) AS tokens
		  FROM accounts a
		  LEFT JOIN (SELECT account_id, count(*) AS n FROM users WHERE active GROUP BY account_id) u ON u.account_id = a.id
		  LEFT JOIN (SELECT account_id, count(*) AS n FROM tokens
		              WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		              GROUP BY account_id) t ON t.account_id = a.id
		 ORDER BY a.id`)
	if err != nil {
		return nil, adminDBError("list accounts", err, nil)
	}
	return out, nil
}

// DepartmentRow is a department as department list shows it.
type DepartmentRow struct {
	ID        int64     `db:"id"`
	Name      string    `db:"name"`
	Users     int       `db:"users"` // active users
	CreatedAt time.Time `db:"created_at"`
}

// ListDepartments lists the departments of an account by name.
func ListDepartments(ctx context.Context, db *sqlx.DB, accountID int64) ([]DepartmentRow, error) {
	if err := accountExists(ctx, db, accountID, "list departments"); err != nil {
		return nil, err
	}
	out := []DepartmentRow{}
	err := db.SelectContext(ctx, &out, `
		SELECT d.id, d.name, d.created_at,
		       (SELECT count(*) FROM users u WHERE u.account_id = $1 AND u.department_id = d.id AND u.active) AS users
		  FROM departments d
		 WHERE d.account_id = $1
		 ORDER BY lower(d.name), d.id`, accountID)
	if err != nil {
		return nil, adminDBError("list departments", err, nil)
	}
	return out, nil
}

// UserRow is a user as user list shows it.
type UserRow struct {
	ID                   int64          `db:"id"`
	Name                 string         `db:"name"`
	Login                string         `db:"login"`
	Role                 string         `db:"role"`
	DepartmentID         sql.NullInt64  `db:"department_id"`
	DepartmentName       sql.NullString `db:"department_name"`
	KPIUsersReport       bool           `db:"kpi_users_report"`
	KPIDepartmentsReport bool           `db:"kpi_departments_report"`
	TimeZone             sql.NullString `db:"time_zone"` // NULL: the account's
	Active               bool           `db:"active"`
	CreatedAt            time.Time      `db:"created_at"`
}

// ListUsers lists the users of an account by id, deactivated ones included.
func ListUsers(ctx context.Context, db *sqlx.DB, accountID int64) ([]UserRow, error) {
	if err := accountExists(ctx, db, accountID, "list users"); err != nil {
		return nil, err
	}
	out := []UserRow{}
	err := db.SelectContext(ctx, &out, `
		SELECT u.id, u.name, u.login, u.role, u.department_id, d.name AS department_name,
		       u.kpi_users_report, u.kpi_departments_report, u.time_zone, u.active, u.created_at
		  FROM users u
		  LEFT JOIN departments d ON d.account_id = $1 AND d.id = u.department_id
		 WHERE u.account_id = $1
		 ORDER BY u.id`, accountID)
	if err != nil {
		return nil, adminDBError("list users", err, nil)
	}
	return out, nil
}

// Token states as token list shows them.
const (
	TokenValid   = "valid"
	TokenExpired = "expired"
	TokenRevoked = "revoked"
)

// TokenRow is a token as token list shows it: never its secret, which is not
// stored (only its SHA-256 is).
type TokenRow struct {
	ID         int64        `db:"id"`
	AccountID  int64        `db:"account_id"`
	UserID     int64        `db:"user_id"`
	UserName   string       `db:"user_name"`
	Label      string       `db:"label"`
	CreatedAt  time.Time    `db:"created_at"`
	ExpiresAt  sql.NullTime `db:"expires_at"`
	LastUsedAt sql.NullTime `db:"last_used_at"`
	RevokedAt  sql.NullTime `db:"revoked_at"`
	State      string       `db:"state"` // TokenValid, TokenExpired or TokenRevoked
}

// TokenFilter chooses the tokens that ListTokens lists.
type TokenFilter struct {
	AccountID int64 // 0: every account
	UserID    int64 // 0: every user (of the account)
	All       bool  // expired and revoked tokens as well
}

// ListTokens lists tokens by id: by default the valid ones of every account,
// or of one account or user.
func ListTokens(ctx context.Context, db *sqlx.DB, f TokenFilter) ([]TokenRow, error) {
	if f.UserID != 0 {
		u, err := findUser(ctx, db, f.UserID)
		if err != nil {
			return nil, err
		}
		if f.AccountID != 0 && f.AccountID != u.AccountID {
			return nil, notFound("account %d has no user %d", f.AccountID, f.UserID)
		}
		f.AccountID = u.AccountID
	} else if f.AccountID != 0 {
		if err := accountExists(ctx, db, f.AccountID, "list tokens"); err != nil {
			return nil, err
		}
	}
	const columns = `
		SELECT t.id, t.account_id, t.user_id, u.name AS user_name, t.label, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
		       CASE WHEN t.revoked_at IS NOT NULL THEN 'revoked'
		            WHEN t.expires_at IS NOT NULL AND t.expires_at <= now() THEN 'expired'
		            ELSE 'valid' END AS state
		  FROM tokens t`
	// $1: every state (--all), else only the valid tokens.
	const valid = `($1 OR (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())))`
	out := []TokenRow{}
	var err error
	if f.AccountID == 0 {
		// cross-account: the operator's audit of every account's tokens
		err = db.SelectContext(ctx, &out, columns+`
		  JOIN users u ON u.account_id = t.account_id AND u.id = t.user_id
		 WHERE `+valid+`
		 ORDER BY t.id`, f.All)
	} else {
		err = db.SelectContext(ctx, &out, columns+`
		  JOIN users u ON u.account_id = $2 AND u.id = t.user_id
		 WHERE t.account_id = $2 AND ($3::bigint = 0 OR t.user_id = $3) AND `+valid+`
		 ORDER BY t.id`, f.All, f.AccountID, f.UserID)
	}
	if err != nil {
		return nil, adminDBError("list tokens", err, nil)
	}
	return out, nil
}

// accountExists is nil when the account exists, else the 404 of it.
func accountExists(ctx context.Context, db *sqlx.DB, accountID int64, op string) error {
	var exists bool
	if err := db.GetContext(ctx, &exists, `SELECT EXISTS (SELECT FROM accounts WHERE id = $1)`, accountID); err != nil {
		return adminDBError(op, err, nil)
	}
	if !exists {
		return noAccount(accountID)
	}
	return nil
}
