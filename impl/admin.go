package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The admin operations create what the API reads but cannot write: accounts,
// departments, users, tokens and directory values. The server binary exposes
// them as commands. They are out-of-band operator actions, so they do not write
// the journal, which records what API clients did.
//
// Their failures are one sentence for the operator: an *Error with code 400
// (input the operator got wrong), 404 (an id that names nothing) or 409 (a
// duplicate, or a state already reached). What PostgreSQL refuses is told by
// its constraint (adminDBError), never in the driver's words.
//
// On Citus every statement names the account as a parameter. The operations
// that take a user, token or mail account by id alone first look up its account
// with one cross-account statement (findUser, findToken, findMailAccount).

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
		badCurrency := badRequest("base currency %q is not an ISO 4217 code of three capital letters, such as EUR", in.BaseCurrency)
		return 0, adminDBError("create account", err, map[string]*Error{
			"accounts_name_check":          badRequest("an account needs a name"),
			"accounts_base_currency_check": badCurrency,
			sqlStateTooLong:                badCurrency, // base_currency is char(3)
		})
	}
	return id, nil
}

// CreateDepartment creates a department of an account and returns its id.
func CreateDepartment(ctx context.Context, db *sqlx.DB, accountID int64, name string) (int64, error) {
	var id int64
	err := db.GetContext(ctx, &id, `INSERT INTO departments (account_id, name) VALUES ($1, $2) RETURNING id`, accountID, name)
	if err != nil {
		return 0, adminDBError("create department", err, map[string]*Error{
			"departments_account_id_fkey": noAccount(accountID),
			"departments_name":            conflict("account %d already has a department named %q", accountID, name),
			"departments_name_check":      badRequest("a department needs a name"),
		})
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
			return 0, badRequest("a head needs a department")
		}
	default:
		return 0, badRequest("role %q is not admin, head or member", in.Role)
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
		var noDepartment *Error
		if in.DepartmentID != nil {
			noDepartment = notFound("account %d has no department %d", in.AccountID, *in.DepartmentID)
		}
		return 0, adminDBError("create user", err, map[string]*Error{
			"users_account_id_fkey":               noAccount(in.AccountID),
			"users_account_id_department_id_fkey": noDepartment,
			"users_login":                         conflict("account %d already has a user with the login %q", in.AccountID, in.Login),
			"users_name_check":                    badRequest("a user needs a name"),
			"users_login_check":                   badRequest("a user needs a login"),
		})
	}
	return id, nil
}

// SetUserActive activates or deactivates a user. A deactivated user's tokens
// stop working at once, since every request looks its token up with its user.
func SetUserActive(ctx context.Context, db *sqlx.DB, userID int64, active bool) error {
	u, err := findUser(ctx, db, userID)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `UPDATE users SET active = $3 WHERE account_id = $1 AND id = $2 AND active <> $3`,
		u.AccountID, userID, active)
	if err != nil {
		return adminDBError("set user active", err, nil)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("set user active: %w", err)
	} else if n == 0 {
		if active {
			return conflict("user %d is already active", userID)
		}
		return conflict("user %d is already deactivated", userID)
	}
	return nil
}

// CreateToken issues a bearer token to an active user; the token is returned
// once and only its hash is stored. A zero ttl means the token does not expire.
func CreateToken(ctx context.Context, db *sqlx.DB, userID int64, label string, ttl time.Duration) (id int64, token string, err error) {
	u, err := findUser(ctx, db, userID)
	if err != nil {
		return 0, "", err
	}
	if !u.Active {
		return 0, "", badRequest("user %d is deactivated: activate them first", userID)
	}
	if ttl < 0 {
		return 0, "", badRequest("the lifetime of a token must not be negative")
	}
	token, hash := NewToken(u.AccountID)
	var expires *time.Time
	if ttl > 0 {
		t := time.Now().Add(ttl)
		expires = &t
	}
	err = db.GetContext(ctx, &id, `
		INSERT INTO tokens (account_id, user_id, hash, label, expires_at) VALUES ($1, $2, $3, $4, $5)
		RETURNING id`, u.AccountID, userID, hash, label, expires)
	if err != nil {
		return 0, "", adminDBError("create token", err, nil)
	}
	return id, token, nil
}

// RevokeToken revokes a token by its id; requests with it are refused from then on.
func RevokeToken(ctx context.Context, db *sqlx.DB, tokenID int64) error {
	var t struct {
		AccountID int64 `db:"account_id"`
		Revoked   bool  `db:"revoked"`
	}
	// cross-account: admin lookup by id
	err := db.GetContext(ctx, &t, `SELECT account_id, revoked_at IS NOT NULL AS revoked FROM tokens WHERE id = $1`, tokenID)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("no token %d", tokenID)
	}
	if err != nil {
		return adminDBError("find token", err, nil)
	}
	res, err := db.ExecContext(ctx, `UPDATE tokens SET revoked_at = now() WHERE account_id = $1 AND id = $2 AND revoked_at IS NULL`,
		t.AccountID, tokenID)
	if err != nil {
		return adminDBError("revoke token", err, nil)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	} else if n == 0 {
		return conflict("token %d is already revoked", tokenID)
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

// directoryCodes are the directories an account has (directory_values.directory_code).
var directoryCodes = []int{DirCompanyTypes, DirCompanyStatuses, DirCompanyCategories, DirTaskKinds, DirDealTypes, DirDealStages,
	DirPositions, DirContactStatuses, DirDocumentTypes, DirDocumentStatuses, DirPaymentForms, DirMoneyCategories, DirAgents, DirCompanyGroups}

// DirectoryCodes returns the codes of the directories an account has.
func DirectoryCodes() []int { return append([]int(nil), directoryCodes...) }

// AddDirectoryValue adds a value to a directory of an account and returns its id.
func AddDirectoryValue(ctx context.Context, db *sqlx.DB, in DirectoryValueInput) (int64, error) {
	if in.Controlled && in.Code != DirCompanyTypes {
		return 0, badRequest("only counterparty types (directory %d) can be controlled", DirCompanyTypes)
	}
	if in.Invoice && in.Code != DirDocumentTypes {
		return 0, badRequest("only document types (directory %d) can be invoices", DirDocumentTypes)
	}
	var id int64
	err := db.GetContext(ctx, &id, `
		INSERT INTO directory_values (account_id, directory_code, name, sort, is_controlled, is_invoice)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		in.AccountID, in.Code, in.Name, in.Sort, in.Controlled, in.Invoice)
	if err != nil {
		codes := make([]string, len(directoryCodes))
		for i, c := range directoryCodes {
			codes[i] = strconv.Itoa(c)
		}
		noDirectory := badRequest("there is no directory %d: the codes are %s", in.Code, strings.Join(codes, ", "))
		return 0, adminDBError("add directory value", err, map[string]*Error{
			"directory_values_account_id_fkey":      noAccount(in.AccountID),
			"directory_values_directory_code_check": noDirectory,
			sqlStateOutOfRange:                      noDirectory, // directory_code is a smallint
			"directory_values_name":                 conflict("directory %d already has the value %q", in.Code, in.Name),
			"directory_values_name_check":           badRequest("a directory value needs a name"),
		})
	}
	return id, nil
}

// checkTimeZone asks PostgreSQL whether it knows the time zone, since the
// server formats every date-time in it.
func checkTimeZone(ctx context.Context, db *sqlx.DB, tz string) error {
	_, err := db.ExecContext(ctx, `SELECT now() AT TIME ZONE $1`, tz)
	if err != nil {
		return adminDBError("check time zone", err, map[string]*Error{
			sqlStateInvalidParameter: badRequest("time zone %q is unknown: use an IANA name such as Europe/Riga or UTC", tz),
		})
	}
	return nil
}

// adminUser is a user found by id alone.
type adminUser struct {
	AccountID int64 `db:"account_id"`
	Active    bool  `db:"active"`
}

// findUser resolves a user id to its account, for the admin operations that
// take a user by id.
func findUser(ctx context.Context, q sqlx.QueryerContext, userID int64) (adminUser, error) {
	var u adminUser
	// cross-account: admin lookup by id
	err := sqlx.GetContext(ctx, q, &u, `SELECT account_id, active FROM users WHERE id = $1`, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return u, notFound("no user %d", userID)
	}
	if err != nil {
		return u, adminDBError("find user", err, nil)
	}
	return u, nil
}

func noAccount(id int64) *Error { return notFound("no account %d", id) }

// SQLSTATEs that the admin operations map by code rather than by constraint.
const (
	sqlStateTooLong          = "22001" // string_data_right_truncation
	sqlStateOutOfRange       = "22003" // numeric_value_out_of_range
	sqlStateInvalidParameter = "22023" // invalid_parameter_value
)

// adminDBError tells what PostgreSQL refused in an admin operation: known
// holds the error of each constraint that the operator's input can break
// (a unique violation 23505, a foreign key 23503, a check 23514; on Citus with
// the shard's suffix) or of an SQLSTATE. Any other refusal is named by its
// SQLSTATE rather than the driver's text; other errors are wrapped with op.
func adminDBError(op string, err error, known map[string]*Error) error {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return fmt.Errorf("%s: %w", op, err)
	}
	switch code, constraint := violation(err); code {
	case "23505", "23503", "23514":
		if e := known[constraint]; e != nil {
			return e
		}
	default:
		if e := known[string(pqErr.Code)]; e != nil {
			return e
		}
	}
	return &dbRefusal{op: op, err: pqErr}
}

// DescribeDBError returns err with a refusal of PostgreSQL told by its
// SQLSTATE rather than the driver's text, for messages an operator reads;
// other errors are wrapped with op.
func DescribeDBError(op string, err error) error {
	if err == nil {
		return nil
	}
	return adminDBError(op, err, nil)
}

// dbRefusal is an error of PostgreSQL that no admin rule explains. Its text
// names the SQLSTATE and its condition, never the server's message, which may
// quote values; the *pq.Error stays reachable through errors.As for the logs.
type dbRefusal struct {
	op  string
	err *pq.Error
}

func (e *dbRefusal) Error() string {
	return fmt.Sprintf("%s: the database refused it (%s, SQLSTATE %s)", e.op, strings.ReplaceAll(e.err.Code.Name(), "_", " "), e.err.Code)
}

func (e *dbRefusal) Unwrap() error { return e.err }
