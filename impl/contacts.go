package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/jmoiron/sqlx"

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
	var created insertedContact
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkCompany(ctx, tx, p, in.CompanyId); err != nil {
			return err
		}
		if err := lockEmails(ctx, tx, p.AccountID, fields.Emails); err != nil {
			return err
		}
		var journal []journalEntry
		var err error
		if created, journal, err = insertContact(ctx, tx, p, in.CompanyId, fields); err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	// "TELEPHONES, EMAILS; the last two are null when no phones or e-mails were sent."
	out := gen.ContactInsertResult{NewID: created.ID}
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
	if name != "" {
		name = escapeLike(name)
	}
	var out listResult
	err = s.generic(ctx).get(ctx, &out, contactListCall, p.callerArgs(name, nil, perPage, offset)...)
	if err != nil {
		return nil, fmt.Errorf("list contacts: %w", err)
	}
	return envelopeReply(successList(out.Value, out.Rows, page, perPage)), nil
}

// contactListCall is the call of crm_contact_list (db/functions/contact_list.sql).
const contactListCall = `SELECT rows, value FROM crm_contact_list($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// companyContacts is GET /contact/list with company_id: "all contact persons of
// that counterparty are returned and other parameters are ignored", so on one
// page, as a quick list. A missing or invisible counterparty is an error.
func (s *Server) companyContacts(ctx context.Context, p *Principal, companyID int64) (gen.ContactListResponseObject, error) {
	var out listResult
	err := s.generic(ctx).get(ctx, &out, contactListCall, p.callerArgs("", companyID, 0, 0)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, companyNotFound(companyID)
	}
	if err != nil {
		return nil, fmt.Errorf("list contacts of counterparty %d: %w", companyID, err)
	}
	return envelopeReply(successList(out.Value, out.Rows, quickPage(out.Rows), out.Rows)), nil
}
