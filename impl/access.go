package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Who sees what. Every rule of access lives in this file, and every statement
// that reads records for a request takes its condition from here:
//
//   - admin sees every record of the account;
//   - head sees the records whose responsible user is in their department, and
//     their own (a head without a department is a member);
//   - member sees the records they are responsible for;
//   - a task is seen through its assignee or its assigner;
//   - a message is seen through its mail account's owner (mail lists show the
//     token owner's mail accounts unless user_ids names others);
//   - a record the caller may not see behaves exactly as a missing one.

// Roles of users: what part of the account's records they see.
const (
	RoleAdmin  = "admin"  // every record of the account
	RoleHead   = "head"   // records of the users of their department, and their own
	RoleMember = "member" // records they are responsible for
)

// sqlFor starts a statement on behalf of p: {acc} is p's account, {me} p's
// user, {tz} p's time zone and, for a user in a department, {dept} that
// department. Each becomes a placeholder only when a template uses it.
func sqlFor(p *Principal) *sqlText {
	q := newSQL()
	q.bind("acc", p.AccountID)
	q.bind("me", p.UserID)
	q.bind("tz", p.TimeZone)
	if p.DepartmentID.Valid {
		q.bind("dept", p.DepartmentID.Int64)
	}
	// The users whose records p sees (visibleUsers), where a rule needs them.
	q.set("visibleUsers", p.visibleUsers())
	// The counterparty (alias co in the universal list, c elsewhere) of a
	// record: see seesCounterparty.
	q.set("co_seen", p.seesCounterparty("co"))
	q.set("c_seen", p.seesCounterparty("c"))
	return q
}

// callerArgs are the first arguments of every function of db/functions, who
// calls and what they see (p_account, p_user, p_role, p_dept, p_tz), followed
// by the operation's own.
func (p *Principal) callerArgs(args ...any) []any {
	return append([]any{p.AccountID, p.UserID, p.Role, p.DepartmentID, p.TimeZone}, args...)
}

// writerArgs is callerArgs for the writing functions of db/functions: the
// caller's token (p_token, NULL for none) comes after the caller.
func (p *Principal) writerArgs(args ...any) []any {
	return p.callerArgs(append([]any{p.tokenArg()}, args...)...)
}

// tokenArg is the caller's token id as the journal records it (NULL for none).
func (p *Principal) tokenArg() sql.NullInt64 {
	return sql.NullInt64{Int64: p.TokenID, Valid: p.TokenID != 0}
}

// seesCounterparty is the one rule for the counterparty columns (company_name,
// company_tax_id, company_url, …) of a record the caller sees (a deal, task,
// document, money movement, mail message): they show its counterparty only
// when the caller may open it, that is when its responsible user is one p
// sees, as for GET /company/get; otherwise they are what a record without
// counterparty shows ("" for names, null for the rest). company_id is the
// record's own field and stays. A deleted counterparty still shows, to whoever
// may see it, on the records that keep it as history.
func (p *Principal) seesCounterparty(alias string) string {
	return p.seesOwner(alias + ".user_id")
}

// seesContactPerson is the one rule for the contact person columns (the mail
// list's contact) of a record the caller sees: a contact person is seen with
// its counterparty, so they show only when the record's counterparty, joined
// as co only when the caller may open it (seesCounterparty), is the contact
// person's own; otherwise they are what a record without contact person
// shows (""). contact_id is the record's own field and stays, as company_id
// does.
func seesContactPerson(ct, co string) string {
	return ct + ".company_id = " + co + ".id"
}

// seesDepartment reports whether p sees by department (a head in one).
func (p *Principal) seesDepartment() bool {
	return p.Role == RoleHead && p.DepartmentID.Valid
}

// visibleUsers is an SQL array of the users whose records p sees: every user
// of the account for an admin, the department's users and themselves for a
// head, themselves for a member. As an array, "user_id = ANY (...)" reads an
// index led by (account_id, user_id) once per user.
func (p *Principal) visibleUsers() string {
	if p.Role != RoleAdmin && !p.seesDepartment() {
		return `ARRAY[{me}::bigint]`
	}
	return `ARRAY(SELECT vu.id FROM users vu WHERE vu.account_id = {acc} AND ` + p.seesUser("vu") + `)`
}

// seesUser is the condition that keeps the users u (an alias of users) whose
// records p sees: every user of the account for an admin, the department's
// users and themselves for a head, themselves for a member (GET /user/list).
func (p *Principal) seesUser(u string) string {
	switch {
	case p.Role == RoleAdmin:
		return "TRUE"
	case p.seesDepartment():
		return "(" + u + ".id = {me} OR " + u + ".department_id = {dept})"
	default:
		return u + ".id = {me}"
	}
}

// seesOwner is the condition that keeps the records whose responsible user is
// the column col.
func (p *Principal) seesOwner(col string) string {
	switch {
	case p.Role == RoleAdmin:
		return "TRUE"
	case p.seesDepartment():
		return col + " = ANY ({visibleUsers})"
	default:
		return col + " = {me}"
	}
}

// requireAdmin refuses the operations that change the account's settings
// (additional fields, ready filters, webhooks) to every role but admin.
func (p *Principal) requireAdmin() error {
	if p.Role != RoleAdmin {
		return &Error{Code: CodeForbidden, Msg: "only admins may do this"}
	}
	return nil
}

// seesJournal is the condition that keeps the journal rows j (an alias) that
// p sees: every change for an admin, the changes made by the department's
// users (and their own) for a head, their own for a member. A change made by
// no user (a background worker's) only admins see. The universal list's
// module 50 and the event feed both read the journal through it.
func (p *Principal) seesJournal(j string) string {
	return p.seesOwner(j + ".user_id")
}

// seesTask is the condition that keeps the tasks t (an alias) whose assignee
// or assigner is a user whose records p sees.
func (p *Principal) seesTask(t string) string {
	if p.Role == RoleAdmin {
		return "TRUE"
	}
	return "(" + p.seesOwner(t+".user_id") + " OR " + p.seesOwner(t+".assigner_id") + ")"
}

// ownsTask is the condition that p is the assignee or the assigner of task t,
// the "mine" of the dashboards.
func ownsTask(t string) string {
	return "(" + t + ".user_id = {me} OR " + t + ".assigner_id = {me})"
}

// mailboxes selects the mail accounts whose messages a mail list shows: those
// of owners (the token owner when nil) that p may see.
func (p *Principal) mailboxes(q *sqlText, owners []int64) string {
	if owners == nil {
		owners = []int64{p.UserID}
	}
	return "SELECT mb.id FROM mail_accounts mb WHERE mb.account_id = {acc} AND mb.user_id = ANY (" +
		q.arg(pq.Array(owners)) + ") AND " + p.seesOwner("mb.user_id")
}

// seesCompany is the condition on the counterparty row c that it is id (a
// placeholder), not deleted, and seen by p.
func (p *Principal) seesCompany(id string) string {
	return "c.account_id = {acc} AND c.id = " + id + " AND c.deleted_at IS NULL AND " + p.seesOwner("c.user_id")
}

// companyNotFound is the error of a counterparty that is missing, deleted or
// not visible to the caller: the reply does not tell the three apart.
func companyNotFound(id int64) *Error {
	return notFound("counterparty %d not found", id)
}

// checkCompany returns companyNotFound unless p may see the counterparty id.
func checkCompany(ctx context.Context, db sqlx.QueryerContext, p *Principal, id int64) error {
	q := sqlFor(p)
	var found bool
	err := sqlx.GetContext(ctx, db, &found, q.expand(`SELECT true FROM companies c WHERE `+p.seesCompany(q.arg(id))), q.args...)
	if errors.Is(err, sql.ErrNoRows) {
		return companyNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("find counterparty %d: %w", id, err)
	}
	return nil
}

// dealCompany returns the counterparty of the deal dealID when p may see the
// deal, and sql.ErrNoRows when the deal is missing or invisible.
func dealCompany(ctx context.Context, db sqlx.QueryerContext, p *Principal, dealID int64) (int64, error) {
	q := sqlFor(p)
	var companyID int64
	err := sqlx.GetContext(ctx, db, &companyID, q.expand(`
		SELECT d.company_id FROM deals d WHERE d.account_id = {acc} AND d.id = `+q.arg(dealID)+` AND `+p.seesOwner("d.user_id")),
		q.args...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("look up deal %d: %w", dealID, err)
	}
	return companyID, err
}

// checkDealOfCompany answers a 400 naming deal_id unless the deal belongs to the
// counterparty and the principal may see it.
func checkDealOfCompany(ctx context.Context, db sqlx.QueryerContext, p *Principal, dealID, companyID int64) error {
	got, err := dealCompany(ctx, db, p, dealID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && got != companyID {
		return badRequest("%s", constraintErrors["tasks_deal_fk"])
	}
	return err
}
