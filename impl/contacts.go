package impl

import (
	"context"
	"fmt"

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

// contactJSON is the object of a contact person (row ct, its counterparty's name
// companyName) with their phones, e-mails and social networks, as the card and
// the contact list show it.
func contactJSON(ct, companyName, tz string) string {
	return fmt.Sprintf(`jsonb_build_object(
		'id', %[1]s.id, 'company_id', %[1]s.company_id, 'company_name', %[2]s, 'name', %[1]s.name,
		'first_name', %[1]s.first_name, 'middle_name', %[1]s.middle_name, 'last_name', %[1]s.last_name,
		'position_id', %[1]s.position_id,
		'position', coalesce((SELECT d.name FROM directory_values d WHERE d.account_id = %[1]s.account_id AND d.id = %[1]s.position_id), ''),
		'status_id', %[1]s.status_id,
		'status', coalesce((SELECT d.name FROM directory_values d WHERE d.account_id = %[1]s.account_id AND d.id = %[1]s.status_id), ''),
		'note', %[1]s.note,
		'created', to_char(%[1]s.created_at AT TIME ZONE %[3]s, 'YYYY-MM-DD HH24:MI:SS'),
		'Phones', coalesce((SELECT jsonb_agg(%[4]s ORDER BY cp.id) FROM phones cp
		                     WHERE cp.account_id = %[1]s.account_id AND cp.contact_id = %[1]s.id), '[]'),
		'Emails', coalesce((SELECT jsonb_agg(%[5]s ORDER BY ce.id) FROM emails ce
		                     WHERE ce.account_id = %[1]s.account_id AND ce.contact_id = %[1]s.id), '[]'),
		'SocialNetworks', coalesce((SELECT jsonb_agg(jsonb_build_object('id', cs.id, 'network', cs.network, 'address', cs.address) ORDER BY cs.id)
		                     FROM contact_socials cs WHERE cs.account_id = %[1]s.account_id AND cs.contact_id = %[1]s.id), '[]'))`,
		ct, companyName, tz, phoneJSON("cp"), emailJSON("ce"))
}

// ContactInsert implements POST /contact/insert.
func (s *Server) ContactInsert(ctx context.Context, req gen.ContactInsertRequestObject) (gen.ContactInsertResponseObject, error) {
	return nil, errNotImplemented
}

// ContactList implements GET /contact/list.
func (s *Server) ContactList(ctx context.Context, req gen.ContactListRequestObject) (gen.ContactListResponseObject, error) {
	return nil, errNotImplemented
}
