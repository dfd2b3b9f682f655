package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// companyRow holds the stored fields of a new counterparty; its json form is the
// journal's record of the insert.
type companyRow struct {
	AccountID       int64          `db:"account_id" json:"-"`
	Name            string         `db:"name" json:"name"`
	Person          int            `db:"person" json:"person"`
	FirstName       string         `db:"first_name" json:"first_name,omitempty"`
	MiddleName      string         `db:"middle_name" json:"middle_name,omitempty"`
	LastName        string         `db:"last_name" json:"last_name,omitempty"`
	Address         string         `db:"address" json:"address,omitempty"`
	City            string         `db:"city" json:"city,omitempty"`
	Region          string         `db:"region" json:"region,omitempty"`
	Country         string         `db:"country" json:"country,omitempty"`
	URL             string         `db:"url" json:"url,omitempty"`
	ActivityType    string         `db:"activity_type" json:"activity_type,omitempty"`
	PropertyForm    string         `db:"property_form" json:"property_form,omitempty"`
	InfoSource      string         `db:"info_source" json:"info_source,omitempty"`
	Note            string         `db:"note" json:"note,omitempty"`
	Tags            pq.StringArray `db:"tags" json:"tags,omitempty"`
	ExternalCode    string         `db:"external_code" json:"external_code,omitempty"`
	TypeID          int64          `db:"type_id" json:"type_id"`
	StatusID        *int64         `db:"status_id" json:"status_id,omitempty"`
	CategoryID      *int64         `db:"category_id" json:"category_id,omitempty"`
	GroupID         *int64         `db:"group_id" json:"group_id,omitempty"`
	AgentID         *int64         `db:"agent_id" json:"agent_id,omitempty"`
	UserID          int64          `db:"user_id" json:"user_id"`
	WhichSiteSource string         `db:"which_site_source" json:"which_site_source,omitempty"`
	WhichHostSource string         `db:"which_host_source" json:"which_host_source,omitempty"`
	WhichLinkSource string         `db:"which_link_source" json:"which_link_source,omitempty"`
	UtmCampaign     string         `db:"utm_campaign" json:"utm_campaign,omitempty"`
	UtmSource       string         `db:"utm_source" json:"utm_source,omitempty"`
	UtmMedium       string         `db:"utm_medium" json:"utm_medium,omitempty"`
	UtmContent      string         `db:"utm_content" json:"utm_content,omitempty"`
	UtmTerm         string         `db:"utm_term" json:"utm_term,omitempty"`
	CreatedVia      string         `db:"created_via" json:"-"`
	CreatedBy       *int64         `db:"created_by" json:"-"`
}

func newCompanyRow(p *Principal, in *gen.CompanyInsertRequest) companyRow {
	row := companyRow{
		AccountID: p.AccountID, Name: in.Name, Person: 1,
		FirstName: str(in.FirstName), MiddleName: str(in.MiddleName), LastName: str(in.LastName),
		Address: str(in.Address), City: str(in.City), Region: str(in.Region), Country: str(in.Country),
		URL: str(in.Url), ActivityType: str(in.ActivityType), PropertyForm: str(in.PropertyForm),
		InfoSource: str(in.InfoSource), Note: str(in.Note), Tags: splitTags(str(in.Tags)),
		ExternalCode: str(in.ExternalCode), TypeID: in.TypeId, StatusID: in.StatusId,
		CategoryID: in.CategoryId, GroupID: in.GroupId, AgentID: in.AgentId, UserID: in.UserId,
		WhichSiteSource: str(in.WhichSiteSource), WhichHostSource: str(in.WhichHostSource),
		WhichLinkSource: str(in.WhichLinkSource), UtmCampaign: str(in.UtmCampaign),
		UtmSource: str(in.UtmSource), UtmMedium: str(in.UtmMedium), UtmContent: str(in.UtmContent),
		UtmTerm: str(in.UtmTerm), CreatedVia: "api", CreatedBy: &p.UserID,
	}
	if in.Person != nil {
		row.Person = int(*in.Person)
	}
	return row
}

// CompanyInsert implements POST /company/insert: the counterparty, its e-mails,
// phones, contact persons and requisites in one transaction.
func (s *Server) CompanyInsert(ctx context.Context, req gen.CompanyInsertRequestObject) (gen.CompanyInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	row := newCompanyRow(p, in)
	checkDuplicates := req.Params.CheckDuplicates != nil && *req.Params.CheckDuplicates

	var id int64
	all := allEmails(in)
	if len(deref(in.Contacts)) == 0 && in.Paymentdetails == nil && ambientTx(ctx) == nil {
		// The common insert: one call of crm_company_insert, which is its own
		// transaction (the e-mails' locks, the check of the responsible user,
		// the duplicate check, the rows and their journal). Under an
		// Idempotency-Key the write must join the key's transaction, which is
		// on the other pool, so it takes the general path below.
		id, err = s.insertCompanyAtOnce(ctx, p, row, emailsOf(in.Emails), phonesOf(in.Phones), checkDuplicates)
		if err != nil {
			return nil, dbError(err)
		}
		return gen.CompanyInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
	}
	if err := s.refuseInactiveUser(ctx, p, "user_id", &in.UserId); err != nil {
		return nil, err
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockEmails(ctx, tx, p.AccountID, all); err != nil {
			return err
		}
		if checkDuplicates {
			if err := findDuplicate(ctx, tx, p, all); err != nil {
				return err
			}
		}
		var journal []journalEntry
		var err error
		if id, err = insertCompany(ctx, tx, row); err != nil {
			return err
		}
		journal = append(journal, journalEntry{ModuleCompanies, "company", id, "insert", row})

		emails, phones := emailsOf(in.Emails), phonesOf(in.Phones)
		entries, err := insertEmailsAndPhones(ctx, tx, p.AccountID, id, nil, emails, phones)
		if err != nil {
			return err
		}
		journal = append(journal, entries...)

		for _, c := range deref(in.Contacts) {
			_, entries, err := insertContact(ctx, tx, p, id, contactFields{
				FirstName: str(c.FirstName), MiddleName: str(c.MiddleName), LastName: str(c.LastName),
				Position: str(c.Position), Note: str(c.Note), StatusID: c.StatusId,
				Emails: emailsOf(c.Emails), Phones: phonesOf(c.Phones),
			})
			if err != nil {
				return err
			}
			journal = append(journal, entries...)
		}

		if in.Paymentdetails != nil {
			_, entries, err := insertRequisites(ctx, tx, p.AccountID, id, true, requisitesFromPaymentdetails(in.Paymentdetails))
			if err != nil {
				return err
			}
			journal = append(journal, entries...)
		}
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.CompanyInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

func insertCompany(ctx context.Context, tx *sqlx.Tx, row companyRow) (int64, error) {
	q := newSQL()
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO companies `+q.values(row)+` RETURNING id`, q.args...); err != nil {
		return 0, fmt.Errorf("insert company: %w", err)
	}
	return id, nil
}

// insertCompanyAtOnce inserts a counterparty with its e-mails and phones and
// writes their journal rows in one call of crm_company_insert
// (db/functions/company_insert.sql), after the duplicate check when asked:
// the work of lockEmails, refuseInactiveUser, insertCompany,
// insertEmailsAndPhones, findDuplicate and writeJournal, with the same rows,
// journal (positions included), 400 for a deactivated responsible user
// (before the 409) and 409.
func (s *Server) insertCompanyAtOnce(ctx context.Context, p *Principal, row companyRow,
	emails []string, phones []phoneInput, checkDuplicates bool) (int64, error) {
	journalRow, err := json.Marshal(row)
	if err != nil {
		return 0, fmt.Errorf("journal company: %w", err)
	}
	columns, err := json.Marshal(dbColumns(row))
	if err != nil {
		return 0, fmt.Errorf("insert company: %w", err)
	}
	lower := make([]string, len(emails))
	for i, e := range emails {
		lower[i] = strings.ToLower(e)
	}
	numbers := make([]string, len(phones))
	descrs := make([]string, len(phones))
	for i, ph := range phones {
		numbers[i], descrs[i] = ph.Phone, ph.Descr
	}
	var out struct {
		Inactive bool           `db:"o_inactive"`
		ID       sql.NullInt64  `db:"o_id"`
		DupID    sql.NullInt64  `db:"o_dup_id"`
		DupName  sql.NullString `db:"o_dup_name"`
		DupEmail sql.NullString `db:"o_dup_email"`
		Visible  sql.NullBool   `db:"o_dup_visible"`
	}
	err = s.callWrite(ctx, &out, "*", "crm_company_insert",
		p.writerArgs(emailLockSpace,
			pq.Array(emailLockKeys(p.AccountID, emails)), string(columns), pq.Array(emails), pq.Array(lower),
			pq.Array(numbers), pq.Array(descrs), checkDuplicates, string(journalRow))...)
	if err != nil {
		return 0, fmt.Errorf("insert company: %w", err)
	}
	if out.Inactive {
		return 0, badRequest("user_id: user %d is deactivated", row.UserID)
	}
	if out.DupID.Valid {
		msg := fmt.Sprintf("duplicate: the e-mail %s already belongs to counterparty %d", out.DupEmail.String, out.DupID.Int64)
		if out.Visible.Bool {
			msg += fmt.Sprintf(" %q", out.DupName.String)
		}
		value := strconv.FormatInt(out.DupID.Int64, 10)
		return 0, &Error{Code: CodeConflict, Msg: msg, Value: &value}
	}
	return out.ID.Int64, nil
}

// dbColumns maps a row's columns (its fields' db tags) to their values, for
// a function of db/functions that reads the row with jsonb_populate_record.
func dbColumns(row any) map[string]any {
	v := reflect.ValueOf(row)
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("db"); name != "" && name != "-" {
			out[name] = v.Field(i).Interface()
		}
	}
	return out
}

// allEmails lists every e-mail of a counterparty insert: its own and those of its
// contact persons.
func allEmails(in *gen.CompanyInsertRequest) []string {
	emails := emailsOf(in.Emails)
	for _, c := range deref(in.Contacts) {
		emails = append(emails, emailsOf(c.Emails)...)
	}
	return emails
}

// emailLockSpace is the first key of the advisory locks that serialise writes of
// one e-mail address within an account ("CRMe").
const emailLockSpace = 0x43524d65

// lockEmails takes, for each e-mail, a transaction-scoped advisory lock on the
// account and the lower-cased address, in a fixed order so that two transactions
// never wait for each other crosswise. Every writer of e-mails takes it, so a
// duplicate check never misses an e-mail being inserted concurrently (the rule
// cannot be a unique constraint: without check_duplicates a duplicate is allowed).
func lockEmails(ctx context.Context, tx *sqlx.Tx, accountID int64, emails []string) error {
	keys := emailLockKeys(accountID, emails)
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, lockEmailsSQL, emailLockSpace, pq.Array(keys), accountID); err != nil {
		return fmt.Errorf("lock e-mails: %w", err)
	}
	return nil
}

// The locks are taken through the account's row, so that on Citus they are
// taken on the node that holds the account's rows, in the transaction that
// then reads and writes them there, whichever node the server talks to.
const lockEmailsSQL = `
		SELECT pg_advisory_xact_lock($1, hashtext(u.k))
		  FROM accounts a, unnest($2::text[]) WITH ORDINALITY AS u (k, n)
		 WHERE a.id = $3
		 ORDER BY u.n`

// emailLockKeys are the sorted, distinct keys of the e-mails' locks.
func emailLockKeys(accountID int64, emails []string) []string {
	keys := make([]string, 0, len(emails))
	for _, e := range emails {
		keys = append(keys, strconv.FormatInt(accountID, 10)+":"+strings.ToLower(e))
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

// findDuplicate returns the 409 error of POST /company/insert when one of the
// e-mails already belongs to a counterparty of the account (or to one of its
// contact persons). The name of that counterparty is told only to a caller who
// may see it.
func findDuplicate(ctx context.Context, tx *sqlx.Tx, p *Principal, emails []string) error {
	if len(emails) == 0 {
		return nil
	}
	lower := make([]string, len(emails))
	for i, e := range emails {
		lower[i] = strings.ToLower(e)
	}
	q := sqlFor(p)
	q.bind("emails", pq.Array(lower))
	q.set("visible", p.seesOwner("c.user_id"))
	var dup struct {
		ID      int64  `db:"id"`
		Name    string `db:"name"`
		Email   string `db:"email"`
		Visible bool   `db:"visible"`
	}
	err := tx.GetContext(ctx, &dup, q.expand(`
		SELECT c.id, c.name, e.email, {visible} AS visible
		  FROM emails e
		  JOIN companies c ON c.account_id = {acc} AND c.id = e.company_id
		 WHERE e.account_id = {acc} AND lower(e.email) = ANY ({emails}) AND c.deleted_at IS NULL
		 ORDER BY c.id
		 LIMIT 1`), q.args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check duplicates: %w", err)
	}
	msg := fmt.Sprintf("duplicate: the e-mail %s already belongs to counterparty %d", dup.Email, dup.ID)
	if dup.Visible {
		msg += fmt.Sprintf(" %q", dup.Name)
	}
	value := strconv.FormatInt(dup.ID, 10)
	return &Error{Code: CodeConflict, Msg: msg, Value: &value}
}

// companyGetCall is the call of crm_company_get (db/functions/company_get.sql).
var companyGetCall = newCallStmt(`SELECT crm_company_get($1, $2, $3, $4, $5, $6)`)

// CompanyGet implements GET /company/get: the whole card in one call of
// crm_company_get (db/functions/company_get.sql).
func (s *Server) CompanyGet(ctx context.Context, req gen.CompanyGetRequestObject) (gen.CompanyGetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var card sql.NullString
	err = s.generic(ctx).get(ctx, &card, s.call(companyGetCall), p.callerArgs(req.Params.Id)...)
	if err != nil {
		return nil, fmt.Errorf("read card of counterparty %d: %w", req.Params.Id, err)
	}
	if !card.Valid {
		// "For a missing or deleted counterparty the reply has status Error."
		return nil, &Error{Code: CodeNotFound, Status: gen.StatusErrorCapital,
			Msg: fmt.Sprintf("counterparty %d not found", req.Params.Id)}
	}
	return envelopeReply(success(card.String)), nil
}

// emailRow is the object of the e-mail row e in the card, for json_agg.
const emailRow = `(SELECT r FROM (SELECT e.id, e.company_id, e.contact_id AS id_contact_man, e.email) r)`

// phoneRow is the object of the phone row ph in the card, for json_agg.
const phoneRow = `(SELECT r FROM (SELECT ph.id, ph.company_id, ph.contact_id AS id_contact_man, ph.phone, ph.descr) r)`

// requisitesRow holds the stored fields of new requisites.
type requisitesRow struct {
	Inn        string `db:"inn" json:"inn,omitempty"`
	Kpp        string `db:"kpp" json:"kpp,omitempty"`
	OgrnClient string `db:"ogrn_client" json:"ogrn_client,omitempty"`
	Okpo       string `db:"okpo" json:"okpo,omitempty"`
	Okved      string `db:"okved" json:"okved,omitempty"`
	Oktmo      string `db:"oktmo" json:"oktmo,omitempty"`
	Okato      string `db:"okato" json:"okato,omitempty"`
	KrName     string `db:"kr_name" json:"kr_name,omitempty"`
	FullName   string `db:"full_name" json:"full_name,omitempty"`
	AdresYur   string `db:"adres_yur" json:"adres_yur,omitempty"`
	AdresFact  string `db:"adres_fact" json:"adres_fact,omitempty"`
	PochtAdr   string `db:"pocht_adr" json:"pocht_adr,omitempty"`
	DirName    string `db:"dir_name" json:"dir_name,omitempty"`
	DirStatus  string `db:"dir_status" json:"dir_status,omitempty"`
	GlBuh      string `db:"gl_buh" json:"gl_buh,omitempty"`
	BankName   string `db:"bank_name" json:"bank_name,omitempty"`
	Bik        string `db:"bik" json:"bik,omitempty"`
	Ks         string `db:"ks" json:"ks,omitempty"`
	Rs         string `db:"rs" json:"rs,omitempty"`
	RequisPrim string `db:"requis_prim" json:"requis_prim,omitempty"`
	// set by insertRequisites
	AccountID int64 `db:"account_id" json:"-"`
	CompanyID int64 `db:"company_id" json:"company_id"`
	IsDefault bool  `db:"is_default" json:"is_default"`
}

func requisitesFromPaymentdetails(in *gen.RequisitesFields) requisitesRow {
	return requisitesRow{
		Inn: str(in.Inn), Kpp: str(in.Kpp), OgrnClient: str(in.OgrnClient), Okpo: str(in.Okpo), Okved: str(in.Okved),
		Oktmo: str(in.Oktmo), Okato: str(in.Okato), KrName: str(in.KrName), FullName: str(in.FullName),
		AdresYur: str(in.AdresYur), AdresFact: str(in.AdresFact), PochtAdr: str(in.PochtAdr),
		DirName: str(in.DirName), DirStatus: str(in.DirStatus), GlBuh: str(in.GlBuh), BankName: str(in.BankName),
		Bik: str(in.Bik), Ks: str(in.Ks), Rs: str(in.Rs), RequisPrim: str(in.RequisPrim),
	}
}

// insertRequisites stores requisites of a counterparty and returns their id and
// the journal entries of what it changed. As default ones they first take the
// default mark from the previous default requisites (the partial unique index
// allows one default per counterparty); the caller serialises this per
// counterparty by locking its row or by having just created it.
func insertRequisites(ctx context.Context, tx *sqlx.Tx, accountID, companyID int64, isDefault bool, row requisitesRow) (int64, []journalEntry, error) {
	row.AccountID, row.CompanyID, row.IsDefault = accountID, companyID, isDefault
	var journal []journalEntry
	if isDefault {
		var demoted []int64
		if err := tx.SelectContext(ctx, &demoted, `UPDATE requisites SET is_default = false
			WHERE account_id = $1 AND company_id = $2 AND is_default RETURNING id`, accountID, companyID); err != nil {
			return 0, nil, fmt.Errorf("clear default requisites: %w", err)
		}
		for _, id := range demoted {
			journal = append(journal, journalEntry{ModuleCompanies, "requisites", id, "update",
				map[string][2]any{"is_default": {true, false}}})
		}
	}
	q := newSQL()
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO requisites `+q.values(row)+` RETURNING id`, q.args...); err != nil {
		return 0, nil, fmt.Errorf("insert requisites: %w", err)
	}
	return id, append(journal, journalEntry{ModuleCompanies, "requisites", id, "insert", row}), nil
}

// insertEmailsAndPhones stores e-mails and phones of a counterparty, or of one
// of its contact persons when contactID is set, and returns their journal
// entries in the order given.
func insertEmailsAndPhones(ctx context.Context, tx *sqlx.Tx, accountID, companyID int64, contactID *int64,
	emails []string, phones []phoneInput) ([]journalEntry, error) {
	var journal []journalEntry
	emailIDs, err := insertEmails(ctx, tx, accountID, companyID, contactID, emails)
	if err != nil {
		return nil, err
	}
	for i, id := range emailIDs {
		journal = append(journal, journalEntry{ModuleCompanies, "email", id, "insert",
			map[string]any{"company_id": companyID, "contact_id": contactID, "email": emails[i]}})
	}
	phoneIDs, err := insertPhones(ctx, tx, accountID, companyID, contactID, phones)
	if err != nil {
		return nil, err
	}
	for i, id := range phoneIDs {
		journal = append(journal, journalEntry{ModuleCompanies, "phone", id, "insert",
			map[string]any{"company_id": companyID, "contact_id": contactID, "phone": phones[i].Phone, "descr": phones[i].Descr}})
	}
	return journal, nil
}

// insertEmails inserts the e-mails in one statement and returns their ids in the
// order given (identity values grow in insertion order).
func insertEmails(ctx context.Context, tx *sqlx.Tx, accountID, companyID int64, contactID *int64, emails []string) ([]int64, error) {
	if len(emails) == 0 {
		return nil, nil
	}
	var ids []int64
	err := tx.SelectContext(ctx, &ids, `
		INSERT INTO emails (account_id, company_id, contact_id, email)
		SELECT $1, $2, $3, e FROM unnest($4::text[]) WITH ORDINALITY AS u (e, n) ORDER BY n
		RETURNING id`, accountID, companyID, contactID, pq.Array(emails))
	if err != nil {
		return nil, fmt.Errorf("insert e-mails: %w", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// insertPhones inserts the phones in one statement and returns their ids in the
// order given.
func insertPhones(ctx context.Context, tx *sqlx.Tx, accountID, companyID int64, contactID *int64, phones []phoneInput) ([]int64, error) {
	if len(phones) == 0 {
		return nil, nil
	}
	numbers := make([]string, len(phones))
	descrs := make([]string, len(phones))
	for i, ph := range phones {
		numbers[i], descrs[i] = ph.Phone, ph.Descr
	}
	var ids []int64
	err := tx.SelectContext(ctx, &ids, `
		INSERT INTO phones (account_id, company_id, contact_id, phone, descr)
		SELECT $1, $2, $3, p, d FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS u (p, d, n) ORDER BY n
		RETURNING id`, accountID, companyID, contactID, pq.Array(numbers), pq.Array(descrs))
	if err != nil {
		return nil, fmt.Errorf("insert phones: %w", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// CompanyUpdate implements POST /company/update: the passed fields that differ
// from the stored ones are written in one UPDATE, with a journal row of their
// old and new values.
func (s *Server) CompanyUpdate(ctx context.Context, req gen.CompanyUpdateRequestObject) (gen.CompanyUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	set, err := json.Marshal(companySet(in))
	if err != nil {
		return nil, fmt.Errorf("update counterparty %d: %w", in.Id, err)
	}
	var refused sql.NullString
	// crm_company_update (db/functions/company_update.sql): the checks of the
	// responsible user and the counterparty, the changed columns and the
	// journal row of what changed in one call.
	err = s.callWrite(ctx, &refused, "o_error", "crm_company_update",
		p.writerArgs(in.UserId != nil && *in.UserId != 0,
			in.Id, string(set))...)
	if err != nil {
		return nil, dbError(fmt.Errorf("update counterparty %d: %w", in.Id, err))
	}
	switch refused.String {
	case "inactive":
		return nil, badRequest("user_id: user %d is deactivated", *in.UserId)
	case "company":
		return nil, companyNotFound(in.Id)
	}
	return gen.CompanyUpdate200JSONResponse{Body: success("1")}, nil
}

// companySet maps each field a counterparty update passes to its column
// and new value, for crm_company_update; column names come only from here.
// A directory reference passed as null clears it (JSON null).
func companySet(in *gen.CompanyUpdateRequest) map[string]any {
	out := map[string]any{}
	text := func(column string, passed *string) {
		if passed != nil {
			out[column] = *passed
		}
	}
	id := func(column string, passed *int64) {
		if passed != nil {
			out[column] = *passed
		}
	}
	ref := func(column string, passed gen.ClearableDirectoryId) {
		if !passed.IsSpecified() {
			return
		}
		if passed.IsNull() {
			out[column] = nil
		} else {
			out[column] = passed.MustGet()
		}
	}
	text("name", in.Name)
	if in.Person != nil {
		out["person"] = int(*in.Person)
	}
	text("first_name", in.FirstName)
	text("middle_name", in.MiddleName)
	text("last_name", in.LastName)
	text("address", in.Address)
	text("city", in.City)
	text("region", in.Region)
	text("country", in.Country)
	text("url", in.Url)
	text("activity_type", in.ActivityType)
	text("property_form", in.PropertyForm)
	text("info_source", in.InfoSource)
	text("note", in.Note)
	if in.Tags != nil {
		out["tags"] = []string(splitTags(*in.Tags)) // a list, as the insert journals it
	}
	text("external_code", in.ExternalCode)
	id("type_id", in.TypeId)
	ref("status_id", in.StatusId)
	ref("category_id", in.CategoryId)
	ref("group_id", in.GroupId)
	ref("agent_id", in.AgentId)
	id("user_id", in.UserId)
	return out
}

// CompanyRequisitesInsert implements POST /company/requisites/insert.
func (s *Server) CompanyRequisitesInsert(ctx context.Context, req gen.CompanyRequisitesInsertRequestObject) (gen.CompanyRequisitesInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		var taxIDBefore string
		// The row lock serialises the requisites inserts of one counterparty, so that
		// "first requisites" and "the previous default ones" are decided on what is
		// committed, and two first requisites never both become the default. The
		// requisites are read by the next statement, whose snapshot is taken after
		// the lock is granted.
		err := tx.GetContext(ctx, &taxIDBefore, q.expand(`SELECT c.tax_id FROM companies c WHERE `+
			p.seesCompany(q.arg(in.IdCompany))+` FOR NO KEY UPDATE`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return companyNotFound(in.IdCompany)
		}
		if err != nil {
			return fmt.Errorf("lock counterparty %d: %w", in.IdCompany, err)
		}
		var hasRequisites bool
		if err := tx.GetContext(ctx, &hasRequisites, `SELECT EXISTS (SELECT 1 FROM requisites WHERE account_id = $1 AND company_id = $2)`,
			p.AccountID, in.IdCompany); err != nil {
			return fmt.Errorf("read requisites of counterparty %d: %w", in.IdCompany, err)
		}
		// "When omitted: True for the counterparty's first requisites, otherwise False."
		isDefault := !hasRequisites
		if in.UseDefault != nil {
			isDefault = *in.UseDefault == gen.RequisitesInsertRequestUseDefaultTrue
		}
		var journal []journalEntry
		if id, journal, err = insertRequisites(ctx, tx, p.AccountID, in.IdCompany, isDefault, requisitesFromInsert(in)); err != nil {
			return err
		}
		// The trigger requisites_sync_tax_id has moved tax_id to the new default's inn.
		var taxID string
		if err := tx.GetContext(ctx, &taxID, `SELECT tax_id FROM companies WHERE account_id = $1 AND id = $2`,
			p.AccountID, in.IdCompany); err != nil {
			return fmt.Errorf("read tax_id of counterparty %d: %w", in.IdCompany, err)
		}
		if taxID != taxIDBefore {
			journal = append(journal, journalEntry{ModuleCompanies, "company", in.IdCompany, "update",
				map[string][2]any{"tax_id": {taxIDBefore, taxID}}})
		}
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.CompanyRequisitesInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

func requisitesFromInsert(in *gen.RequisitesInsertRequest) requisitesRow {
	return requisitesRow{
		Inn: str(in.Inn), Kpp: str(in.Kpp), OgrnClient: str(in.OgrnClient), Okpo: str(in.Okpo), Okved: str(in.Okved),
		Oktmo: str(in.Oktmo), Okato: str(in.Okato), KrName: str(in.KrName), FullName: str(in.FullName),
		AdresYur: str(in.AdresYur), AdresFact: str(in.AdresFact), PochtAdr: str(in.PochtAdr),
		DirName: str(in.DirName), DirStatus: str(in.DirStatus), GlBuh: str(in.GlBuh), BankName: str(in.BankName),
		Bik: str(in.Bik), Ks: str(in.Ks), Rs: str(in.Rs), RequisPrim: str(in.RequisPrim),
	}
}

// CompanyPhoneInsert implements POST /company/phone/insert. The foreign key
// phones_contact_fk checks that contact_id is a contact person of company_id.
func (s *Server) CompanyPhoneInsert(ctx context.Context, req gen.CompanyPhoneInsertRequestObject) (gen.CompanyPhoneInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkCompany(ctx, tx, p, in.CompanyId); err != nil {
			return err
		}
		journal, err := insertEmailsAndPhones(ctx, tx, p.AccountID, in.CompanyId, in.ContactId, nil,
			[]phoneInput{{Phone: in.Phone, Descr: str(in.Descr)}})
		if err != nil {
			return err
		}
		id = journal[0].recordID
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.CompanyPhoneInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

// CompanyEmailInsert implements POST /company/email/insert. It takes the
// e-mail's lock like every writer of e-mails, so a concurrent duplicate check of
// POST /company/insert either sees this e-mail or runs before it exists.
func (s *Server) CompanyEmailInsert(ctx context.Context, req gen.CompanyEmailInsertRequestObject) (gen.CompanyEmailInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkCompany(ctx, tx, p, in.CompanyId); err != nil {
			return err
		}
		if err := lockEmails(ctx, tx, p.AccountID, []string{in.Email}); err != nil {
			return err
		}
		journal, err := insertEmailsAndPhones(ctx, tx, p.AccountID, in.CompanyId, in.ContactId, []string{in.Email}, nil)
		if err != nil {
			return err
		}
		id = journal[0].recordID
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.CompanyEmailInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}
