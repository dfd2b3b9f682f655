package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// contactFields is a contact person as given in a request.
type contactFields struct {
	FirstName, MiddleName, LastName string
	Position                        string
	Note                            string
	StatusID                        *int64
	Emails                          []string
	Phones                          []phoneInput
}

// insertedContact is what inserting a contact person created.
type insertedContact struct {
	ID       int64
	EmailIDs []int64
	PhoneIDs []int64
}

// insertContact stores a contact person of the counterparty companyID with their
// e-mails and phones, adding a new position to the positions directory, and
// returns the journal entries of everything it created.
func insertContact(ctx context.Context, tx *sqlx.Tx, p *Principal, companyID int64, in contactFields) (insertedContact, []journalEntry, error) {
	var res insertedContact
	var positionRef *int64
	if in.Position != "" {
		id, err := positionID(ctx, tx, p.AccountID, in.Position)
		if err != nil {
			return res, nil, err
		}
		positionRef = &id
	}
	err := tx.GetContext(ctx, &res.ID, `
		INSERT INTO contacts (account_id, company_id, first_name, middle_name, last_name, position_id, status_id, note, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		RETURNING id`,
		p.AccountID, companyID, in.FirstName, in.MiddleName, in.LastName, positionRef, in.StatusID, in.Note, p.UserID)
	if err != nil {
		return res, nil, fmt.Errorf("insert contact: %w", err)
	}
	journal := []journalEntry{{ModuleCompanies, "contact", res.ID, "insert", map[string]any{
		"company_id": companyID, "first_name": in.FirstName, "middle_name": in.MiddleName, "last_name": in.LastName,
		"position": in.Position, "position_id": positionRef, "status_id": in.StatusID, "note": in.Note,
	}}}
	entries, err := insertEmailsAndPhones(ctx, tx, p.AccountID, companyID, &res.ID, in.Emails, in.Phones)
	if err != nil {
		return res, nil, err
	}
	for _, e := range entries {
		switch e.entity {
		case "email":
			res.EmailIDs = append(res.EmailIDs, e.recordID)
		case "phone":
			res.PhoneIDs = append(res.PhoneIDs, e.recordID)
		}
	}
	return res, append(journal, entries...), nil
}

// contactJSON is the object of the contact person ct (of the counterparty c)
// with their phones, e-mails and social networks, as the card and the contact
// lists show it, for json_agg. It reads the joins of contactJoins.
//
// The statements that show contact persons build their JSON with the json
// functions, not with jsonb: json writes text as it goes, while jsonb builds a
// tree for every object and converts it again at every level of nesting and
// at the end, which made the card of a counterparty with 1,000 contact
// persons cost about 50 ms of the database's time instead of about 20 (issue
// 16, item 4). A row names its members without the blanks that
// json_build_object puts around every colon.
var contactJSON = `(SELECT r FROM (SELECT
	ct.id, ct.company_id, c.name AS company_name, ct.name,
	ct.first_name, ct.middle_name, ct.last_name,
	ct.position_id, coalesce(ctp.name, '') AS position,
	ct.status_id, coalesce(cts.name, '') AS status,
	ct.note,
	to_char(ct.created_at AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS') AS created,
	` + contactItems(`SELECT ph.contact_id, json_agg(`+phoneRow+` ORDER BY ph.id) AS list
	                     FROM phones ph
	                    WHERE ph.account_id = {acc} AND ph.contact_id IS NOT NULL AND ph.contact_id = ANY ({contactIDs})
	                    GROUP BY ph.contact_id`) + ` AS "Phones",
	` + contactItems(`SELECT e.contact_id, json_agg(`+emailRow+` ORDER BY e.id) AS list
	                     FROM emails e
	                    WHERE e.account_id = {acc} AND e.contact_id IS NOT NULL AND e.contact_id = ANY ({contactIDs})
	                    GROUP BY e.contact_id`) + ` AS "Emails",
	` + contactItems(`SELECT cs.contact_id, json_agg((SELECT r FROM (SELECT cs.id, cs.network, cs.address) r) ORDER BY cs.id) AS list
	                     FROM contact_socials cs
	                    WHERE cs.account_id = {acc} AND cs.contact_id = ANY ({contactIDs})
	                    GROUP BY cs.contact_id`) + ` AS "SocialNetworks") r)`

// contactItems is the JSON array of the items of the contact person ct, out of
// grouped, a statement of (contact_id, list) rows: the lists of every contact
// person of the statement.
//
// Each of the three sets of items is read once for all the contact persons of
// the statement (the array {contactIDs}, an SQL expression the caller sets)
// through the indexes led by (account_id, contact_id), into one jsonb object
// from a contact person's id to the text of their array, which each contact
// person looks up and reads as json. The subquery does not refer to ct, so
// PostgreSQL runs it once (an InitPlan), and the object holds short strings,
// cheap to build and to search. A join of the contact persons to the grouped
// lists would be faster by a little, but a nested loop over it would group the
// lists again for every contact person. Every table is read with the constant
// account {acc}, never with a correlated x.account_id = ct.account_id, which
// hides the constant from the planner (and from Citus's router).
func contactItems(grouped string) string {
	return `coalesce(((SELECT jsonb_object_agg(x.contact_id, x.list::text) FROM (` + grouped + `) x) ->> ct.id::text)::json, '[]')`
}

// contactJoins joins to the contact persons ct the names of their position
// and status, for contactJSON.
const contactJoins = `
	LEFT JOIN directory_values ctp ON ctp.account_id = {acc} AND ctp.id = ct.position_id
	LEFT JOIN directory_values cts ON cts.account_id = {acc} AND cts.id = ct.status_id`

// contactsOfCompany is the array of the ids of the contact persons of the
// counterparty c, for {contactIDs}.
const contactsOfCompany = `ARRAY(SELECT x.id FROM contacts x WHERE x.account_id = {acc} AND x.company_id = c.id)`

// setContact sets the slots of contactJSON and contactJoins; ids is the array
// of the contact persons the statement shows.
func setContact(q *sqlText, ids string) {
	q.set("contact", contactJSON)
	q.set("contactJoins", contactJoins)
	q.set("contactIDs", ids)
}

// ContactInsert implements POST /contact/insert: the contact person with their
// e-mails and phones in one transaction.
func (s *Server) ContactInsert(ctx context.Context, req gen.ContactInsertRequestObject) (gen.ContactInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	fields := contactFields{
		FirstName: str(in.FirstName), MiddleName: str(in.MiddleName), LastName: str(in.LastName),
		Position: str(in.Position), Note: str(in.Note), StatusID: in.StatusId,
		Emails: emailsOf(in.Emails), Phones: phonesOf(in.Phones),
	}
	numbers := make([]string, len(fields.Phones))
	descrs := make([]string, len(fields.Phones))
	for i, ph := range fields.Phones {
		numbers[i], descrs[i] = ph.Phone, ph.Descr
	}
	var created struct {
		Found    bool          `db:"o_found"`
		ID       int64         `db:"o_id"`
		EmailIDs pq.Int64Array `db:"o_email_ids"`
		PhoneIDs pq.Int64Array `db:"o_phone_ids"`
	}
	// crm_contact_insert (db/functions/contact_insert.sql): the check of the
	// counterparty, the e-mails' locks, the rows and their journal in one call.
	err = s.callWrite(ctx, &created, `o_found, coalesce(o_id, 0) AS o_id, o_email_ids, o_phone_ids`, "crm_contact_insert",
		p.writerArgs(in.CompanyId,
			fields.FirstName, fields.MiddleName, fields.LastName, fields.Position, fields.StatusID, fields.Note,
			emailLockSpace, pq.Array(emailLockKeys(p.AccountID, fields.Emails)), pq.Array(fields.Emails),
			pq.Array(numbers), pq.Array(descrs))...)
	if err != nil {
		return nil, dbError(err)
	}
	if !created.Found {
		return nil, companyNotFound(in.CompanyId)
	}
	// "TELEPHONES, EMAILS; the last two are null when no phones or e-mails were sent."
	out := gen.ContactInserted{NewID: created.ID}
	if len(fields.Phones) > 0 {
		phones := make([]gen.InsertedPhone, len(fields.Phones))
		for i, ph := range fields.Phones {
			phones[i] = gen.InsertedPhone{Id: created.PhoneIDs[i], Phone: ph.Phone, Descr: ph.Descr}
		}
		out.TELEPHONES = &phones
	}
	if len(fields.Emails) > 0 {
		emails := make([]gen.InsertedEmail, len(fields.Emails))
		for i, e := range fields.Emails {
			emails[i] = gen.InsertedEmail{Id: created.EmailIDs[i], Email: e}
		}
		out.EMAILS = &emails
	}
	value, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode new contact %d: %w", created.ID, err)
	}
	return gen.ContactInsert200JSONResponse{Body: success(string(value))}, nil
}

// contactsPerPage is the default records_onpage of GET /contact/list; the
// validator holds it to 1..200 (openapi.yaml) and page to 1 or more.
const contactsPerPage = 50

// ContactList implements GET /contact/list: a page of the contact persons of
// the counterparties the caller may see, newest first, or with company_id all
// contact persons of that one counterparty.
func (s *Server) ContactList(ctx context.Context, req gen.ContactListRequestObject) (gen.ContactListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if req.Params.CompanyId != nil {
		return s.companyContacts(ctx, p, *req.Params.CompanyId)
	}
	page, perPage := 1, contactsPerPage
	if req.Params.Page != nil {
		page = *req.Params.Page
	}
	if req.Params.RecordsOnpage != nil {
		perPage = *req.Params.RecordsOnpage
	}
	offset := int64(math.MaxInt64) // a page past any possible end
	if int64(page-1) <= math.MaxInt64/int64(perPage) {
		offset = int64(page-1) * int64(perPage)
	}

	name := str(req.Params.Name)
	var out listResult
	if s.fastPath {
		if name != "" {
			name = escapeLike(name)
		}
		err = s.generic(ctx).get(ctx, &out, s.call(contactListCall), p.callerArgs(name, nil, perPage, offset)...)
	} else {
		query, args := contactListSQL(p, name, perPage, offset)
		err = s.db(ctx).GetContext(ctx, &out, query, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("list contacts: %w", err)
	}
	return envelopeReply(successList(out.Value, out.Rows, page, perPage)), nil
}

// contactListCall is the call of crm_contact_list (db/functions/contact_list.sql).
var contactListCall = newCallStmt(`SELECT rows, value FROM crm_contact_list($1, $2, $3, $4, $5, $6, $7, $8, $9)`)

// contactListSQL is the statement of GET /contact/list without company_id: the
// total and one page of the contact persons p sees whose name contains name
// ("" for all).
func contactListSQL(p *Principal, name string, perPage int, offset int64) (string, []any) {
	q := sqlFor(p)
	setContact(q, "ARRAY(SELECT pg.id FROM pg)")
	q.set("visible", p.seesOwner("c.user_id"))
	q.set("byName", "TRUE")
	// Without a name the total is the maintained count of the contact persons
	// of the live counterparties of the owners the caller sees (list_counts,
	// module 1, kind 1: db/migrations/0065_contact_items.sql); counting them
	// would join every contact person of the account with its counterparty.
	q.set("total", "SELECT coalesce(sum(n), 0) FROM list_counts WHERE account_id = {acc} AND module = 1 AND kind = 1 AND "+
		p.seesOwner("owner_id"))
	if name != "" {
		q.set("byName", "ct.name ILIKE "+q.arg("%"+escapeLike(name)+"%"))
		q.set("total", "SELECT count(*) FROM {matches}")
	}
	q.set("matches", `contacts ct JOIN companies c ON c.account_id = {acc} AND c.id = ct.company_id
		WHERE ct.account_id = {acc} AND c.deleted_at IS NULL AND {visible} AND {byName}`)
	// The page's ids are chosen first, so that the JSON of a contact is built
	// only for the rows on the page, and their items are read for the page alone.
	query := q.expand(`
		WITH pg AS MATERIALIZED (SELECT ct.id FROM {matches} ORDER BY ct.id DESC LIMIT ` + q.arg(perPage) + ` OFFSET ` + q.arg(offset) + `)
		SELECT ({total}) AS rows,
		       coalesce((SELECT json_agg({contact} ORDER BY ct.id DESC)
		                   FROM pg
		                   JOIN contacts ct ON ct.account_id = {acc} AND ct.id = pg.id
		                   JOIN companies c ON c.account_id = {acc} AND c.id = ct.company_id
		                   {contactJoins}), '[]')::text AS value`)
	return query, q.args
}

// companyContacts is GET /contact/list with company_id: "all contact persons of
// that counterparty are returned and other parameters are ignored", so on one
// page, as a quick list. A missing or invisible counterparty is an error.
func (s *Server) companyContacts(ctx context.Context, p *Principal, companyID int64) (gen.ContactListResponseObject, error) {
	var out listResult
	var err error
	if s.fastPath {
		err = s.generic(ctx).get(ctx, &out, s.call(contactListCall), p.callerArgs("", companyID, 0, 0)...)
	} else {
		q := sqlFor(p)
		setContact(q, contactsOfCompany)
		query := q.expand(`
			SELECT (SELECT count(*) FROM contacts x WHERE x.account_id = {acc} AND x.company_id = c.id) AS rows,
			       coalesce((SELECT json_agg({contact} ORDER BY ct.id DESC)
			                   FROM contacts ct {contactJoins}
			                  WHERE ct.account_id = {acc} AND ct.company_id = c.id), '[]')::text AS value
			  FROM companies c
			 WHERE ` + p.seesCompany(q.arg(companyID)))
		err = s.db(ctx).GetContext(ctx, &out, query, q.args...)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, companyNotFound(companyID)
	}
	if err != nil {
		return nil, fmt.Errorf("list contacts of counterparty %d: %w", companyID, err)
	}
	return envelopeReply(successList(out.Value, out.Rows, quickPage(out.Rows), out.Rows)), nil
}
