package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// The admin operations create what the API reads but cannot write: accounts,
// departments, users, tokens and directory values. The server binary exposes
// them as commands. They are out-of-band operator actions, so they do not write
// the journal, which records what API clients did.

// AccountInput describes a new account.
type AccountInput struct {
	Name         string
	BaseCurrency string // ISO 4217 code, such as EUR
	TimeZone     string // IANA name, such as Europe/Riga
}

// CreateAccount creates an account and returns its id.
func CreateAccount(ctx context.Context, db *sqlx.DB, in AccountInput) (int64, error) {
	if err := checkTimeZone(ctx, db, in.TimeZone); err != nil {
		return 0, err
	}
	var id int64
	err := db.GetContext(ctx, &id, `INSERT INTO accounts (name, base_currency, time_zone) VALUES ($1, $2, $3) RETURNING id`,
		in.Name, in.BaseCurrency, in.TimeZone)
	if err != nil {
		return 0, fmt.Errorf("create account: %w", err)
	}
	return id, nil
}

// CreateDepartment creates a department of an account and returns its id.
func CreateDepartment(ctx context.Context, db *sqlx.DB, accountID int64, name string) (int64, error) {
	var id int64
	err := db.GetContext(ctx, &id, `INSERT INTO departments (account_id, name) VALUES ($1, $2) RETURNING id`, accountID, name)
	if err != nil {
		return 0, fmt.Errorf("create department: %w", err)
	}
	return id, nil
}

// UserInput describes a new user.
type UserInput struct {
	AccountID            int64
	Name                 string
	Login                string
	Role                 string // admin, head or member
	DepartmentID         *int64
	KPIUsersReport       bool
	KPIDepartmentsReport bool
	TimeZone             string // "" for the account's time zone
}

// CreateUser creates a user and returns its id.
func CreateUser(ctx context.Context, db *sqlx.DB, in UserInput) (int64, error) {
	switch in.Role {
	case RoleAdmin, RoleMember:
	case RoleHead:
		if in.DepartmentID == nil {
			return 0, errors.New("create user: a head needs a department")
		}
	default:
		return 0, fmt.Errorf("create user: role %q is not admin, head or member", in.Role)
	}
	var tz *string
	if in.TimeZone != "" {
		if err := checkTimeZone(ctx, db, in.TimeZone); err != nil {
			return 0, err
		}
		tz = &in.TimeZone
	}
	var id int64
	err := db.GetContext(ctx, &id, `
		INSERT INTO users (account_id, name, login, role, department_id, kpi_users_report, kpi_departments_report, time_zone)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		in.AccountID, in.Name, in.Login, in.Role, in.DepartmentID, in.KPIUsersReport, in.KPIDepartmentsReport, tz)
	if err != nil {
		return 0, fmt.Errorf("create user: %w", err)
	}
	return id, nil
}

// CreateToken issues a bearer token to a user; the token is returned once and
// only its hash is stored. A zero ttl means the token does not expire.
func CreateToken(ctx context.Context, db *sqlx.DB, userID int64, label string, ttl time.Duration) (id int64, token string, err error) {
	var accountID int64
	err = db.GetContext(ctx, &accountID, `SELECT account_id FROM users WHERE id = $1 AND active`, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("create token: no active user %d", userID)
	}
	if err != nil {
		return 0, "", fmt.Errorf("create token: %w", err)
	}
	token, hash := NewToken(accountID)
	var expires *time.Time
	if ttl > 0 {
		t := time.Now().Add(ttl)
		expires = &t
	}
	err = db.GetContext(ctx, &id, `
		INSERT INTO tokens (account_id, user_id, hash, label, expires_at) VALUES ($1, $2, $3, $4, $5)
		RETURNING id`, accountID, userID, hash, label, expires)
	if err != nil {
		return 0, "", fmt.Errorf("create token: %w", err)
	}
	return id, token, nil
}

// RevokeToken revokes a token by its id; requests with it are refused from then on.
func RevokeToken(ctx context.Context, db *sqlx.DB, tokenID int64) error {
	res, err := db.ExecContext(ctx, `UPDATE tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, tokenID)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke token: no unrevoked token %d", tokenID)
	}
	return nil
}

// DirectoryValueInput describes a new directory value.
type DirectoryValueInput struct {
	AccountID  int64
	Code       int
	Name       string
	Sort       int
	Controlled bool // counterparty types (9): watched by "forgotten companies"
	Invoice    bool // document types (44): counted as issued invoices
}

// AddDirectoryValue adds a value to a directory of an account and returns its id.
func AddDirectoryValue(ctx context.Context, db *sqlx.DB, in DirectoryValueInput) (int64, error) {
	if in.Controlled && in.Code != DirCompanyTypes {
		return 0, fmt.Errorf("add directory value: only counterparty types (%d) can be controlled", DirCompanyTypes)
	}
	if in.Invoice && in.Code != DirDocumentTypes {
		return 0, fmt.Errorf("add directory value: only document types (%d) can be invoices", DirDocumentTypes)
	}
	var id int64
	err := db.GetContext(ctx, &id, `
		INSERT INTO directory_values (account_id, directory_code, name, sort, is_controlled, is_invoice)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		in.AccountID, in.Code, in.Name, in.Sort, in.Controlled, in.Invoice)
	if err != nil {
		return 0, fmt.Errorf("add directory value: %w", err)
	}
	return id, nil
}

// checkTimeZone asks PostgreSQL whether it knows the time zone, since the
// server formats every date-time in it.
func checkTimeZone(ctx context.Context, db *sqlx.DB, tz string) error {
	if _, err := db.ExecContext(ctx, `SELECT now() AT TIME ZONE $1`, tz); err != nil {
		return fmt.Errorf("time zone %q is unknown to PostgreSQL", tz)
	}
	return nil
}
