package impl

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
	"github.com/crmservice/crm/impl/mailer"
)

// Mail folders: the codes of the mail list's segment filter and of
// mail_messages.folder.
const (
	FolderInbox  = 1
	FolderSent   = 2
	FolderDrafts = 3
	FolderTrash  = 4
	FolderSpam   = 5
	FolderMore   = 6
)

// MailSend implements POST /mail/send: the message is checked, composed and
// stored in the sent folder as queued, in one transaction with its journal row;
// the mail worker delivers it.
func (s *Server) MailSend(ctx context.Context, req gen.MailSendRequestObject) (gen.MailSendResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body.Mail
	m, err := mailer.DecodeDraft(mailer.Draft{Subject: in.Subject, Body: in.Body, To: in.ToAddress, Cc: str(in.Cc), Bcc: str(in.Bcc)})
	if err != nil {
		return nil, mailInputError(err)
	}
	mailAccountID, err := strconv.ParseInt(in.AccountId, 10, 64)
	if err != nil { // the contract's pattern allows 18 digits at most
		return nil, badRequest("mail.account_id: not a mail account id")
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		from, err := senderAccount(ctx, tx, p, mailAccountID)
		if err != nil {
			return err
		}
		links, err := resolveLinks(ctx, tx, p, mailLinks{CompanyID: in.CompanyId, ContactID: in.ContactId, DealID: in.DealId},
			mailer.Addresses(m.To, m.Cc, m.Bcc))
		if err != nil {
			return err
		}
		date := time.Now().Truncate(time.Second)
		messageID := mailer.NewMessageID(from.Address)
		raw, text, err := m.Compose(from, date, messageID)
		if err != nil {
			return err
		}
		row := mailRow{
			AccountID: p.AccountID, MailAccountID: mailAccountID, Folder: FolderSent,
			FromName: from.Name, FromAddress: from.Address,
			ToName: mailer.DisplayNames(m.To), ToAddress: strings.Join(mailer.Addresses(m.To), ", "),
			Cc: strings.Join(mailer.Addresses(m.Cc), ", "), Bcc: strings.Join(mailer.Addresses(m.Bcc), ", "),
			Subject: m.Subject, Date: date, mailLinks: links, MessageID: messageID,
			SmallPartOfBody: mailer.Preview(text), Body: m.HTML, CreatedBy: &p.UserID,
		}
		// lib/pq sends a []byte as hexadecimal text, twice its size: the MIME
		// text (ASCII headers, UTF-8 parts without NUL) goes as text instead,
		// turned into the bytea's bytes by PostgreSQL.
		q := newSQL()
		q.set("raw", "$18")
		rawValue := any(raw)
		if utf8.Valid(raw) && bytes.IndexByte(raw, 0) < 0 {
			q.set("raw", "convert_to($18::text, 'UTF8')")
			rawValue = string(raw)
		}
		raw = nil
		var id int64
		err = tx.GetContext(ctx, &id, q.expand(`
			INSERT INTO mail_messages (account_id, mail_account_id, folder, from_name, from_address, to_name, to_address,
				cc, bcc, subject, date, company_id, contact_id, deal_id, message_id, attachment_flag, small_part_of_body,
				body, delivery_state, attempts, next_attempt_at, raw_message, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, false, $16, $17,
				'queued', 0, now(), {raw}, $19)
			RETURNING id`),
			row.AccountID, row.MailAccountID, row.Folder, row.FromName, row.FromAddress, row.ToName, row.ToAddress,
			row.Cc, row.Bcc, row.Subject, row.Date, row.CompanyID, row.ContactID, row.DealID, row.MessageID,
			row.SmallPartOfBody, row.Body, rawValue, row.CreatedBy)
		if err != nil {
			return fmt.Errorf("insert mail message: %w", err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleMail, "mail", id, "send", row.journal()}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	// "Reply: status success, code 0, value empty string."
	code := "0"
	return gen.MailSend200JSONResponse{Body: envelope(gen.StatusSuccess, &code, "", "")}, nil
}

// mailInputError is the one mapping of mailer's input errors to the "400"
// envelope: the field is named as in the body of POST /mail/send.
func mailInputError(err error) error {
	var in *mailer.InputError
	if !errors.As(err, &in) {
		return err
	}
	if in.Field == "" {
		return badRequest("mail: %s", in.Reason)
	}
	return badRequest("mail.%s: %s", in.Field, in.Reason)
}

// mailLinks are the counterparty, contact person and deal a message concerns.
type mailLinks struct {
	CompanyID *int64 `db:"company_id" json:"company_id"`
	ContactID *int64 `db:"contact_id" json:"contact_id"`
	DealID    *int64 `db:"deal_id" json:"deal_id"`
}

// mailRow is a stored message, sent or received, without its delivery state;
// its journal form leaves the body out.
type mailRow struct {
	AccountID     int64
	MailAccountID int64
	Folder        int
	FromName      string
	FromAddress   string
	ToName        string
	ToAddress     string
	Cc, Bcc       string
	Subject       string
	Date          time.Time
	mailLinks
	MessageID       string
	AttachmentFlag  bool
	SmallPartOfBody string
	Body            string
	CreatedBy       *int64
}

func (r mailRow) journal() map[string]any {
	return map[string]any{
		"mail_account_id": r.MailAccountID, "folder": r.Folder, "from_address": r.FromAddress,
		"to_address": r.ToAddress, "cc": r.Cc, "bcc": r.Bcc, "subject": r.Subject, "message_id": r.MessageID,
		"company_id": r.CompanyID, "contact_id": r.ContactID, "deal_id": r.DealID,
	}
}

// senderAccount is the mail account id of the token owner, usable for sending.
// Only the owner of a mail account sends through it, whatever their role: a
// message goes out under the owner's name.
func senderAccount(ctx context.Context, tx *sqlx.Tx, p *Principal, id int64) (*mail.Address, error) {
	var acc struct {
		Address     string `db:"address"`
		DisplayName string `db:"display_name"`
		Active      bool   `db:"active"`
	}
	err := tx.GetContext(ctx, &acc, `
		SELECT address, display_name, active FROM mail_accounts WHERE account_id = $1 AND id = $2 AND user_id = $3`,
		p.AccountID, id, p.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("mail.account_id: mail account %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("look up mail account: %w", err)
	}
	if !acc.Active {
		return nil, badRequest("mail.account_id: mail account %d is disabled", id)
	}
	return &mail.Address{Name: acc.DisplayName, Address: acc.Address}, nil
}

// resolveLinks checks the links given with a message and completes them: a
// contact person or a deal given alone brings its counterparty; a counterparty
// without a contact person gets the one whose e-mail is among addrs; a message
// without any link gets the counterparty (and contact person) whose e-mail is
// the first of addrs that one has. Given links must exist, be visible to the
// token owner and belong together.
func resolveLinks(ctx context.Context, tx *sqlx.Tx, p *Principal, in mailLinks, addrs []string) (mailLinks, error) {
	out := in
	var contactCompany, companyOfDeal int64
	if in.ContactID != nil {
		err := tx.GetContext(ctx, &contactCompany, `SELECT company_id FROM contacts WHERE account_id = $1 AND id = $2`,
			p.AccountID, *in.ContactID)
		if errors.Is(err, sql.ErrNoRows) {
			return out, badRequest("%s", constraintErrors["mail_messages_contact_fk"])
		}
		if err != nil {
			return out, fmt.Errorf("look up contact: %w", err)
		}
	}
	if in.DealID != nil {
		var err error
		companyOfDeal, err = dealCompany(ctx, tx, p, *in.DealID)
		if errors.Is(err, sql.ErrNoRows) {
			return out, badRequest("%s", constraintErrors["mail_messages_deal_fk"])
		}
		if err != nil {
			return out, err
		}
	}
	switch {
	case out.CompanyID != nil:
	case in.ContactID != nil:
		out.CompanyID = &contactCompany
	case in.DealID != nil:
		out.CompanyID = &companyOfDeal
	}
	if out.CompanyID != nil {
		q := sqlFor(p)
		var visible bool
		err := tx.GetContext(ctx, &visible, q.expand(`SELECT EXISTS (SELECT 1 FROM companies c WHERE `+p.seesCompany(q.arg(*out.CompanyID))+`)`), q.args...)
		if err != nil {
			return out, fmt.Errorf("look up counterparty: %w", err)
		}
		if !visible {
			return out, badRequest("%s", constraintErrors["mail_messages_company_fk"])
		}
	}
	if in.ContactID != nil && contactCompany != *out.CompanyID {
		return out, badRequest("%s", constraintErrors["mail_messages_company_contact_fk"])
	}
	if in.DealID != nil && companyOfDeal != *out.CompanyID {
		return out, badRequest("%s", constraintErrors["mail_messages_company_deal_fk"])
	}
	if out.ContactID == nil {
		company, contact, err := linkByAddress(ctx, tx, p.AccountID, out.CompanyID, addrs)
		if err != nil {
			return out, err
		}
		if out.CompanyID == nil {
			out.CompanyID = company
		}
		out.ContactID = contact
	}
	return out, nil
}

// linkByAddress finds the counterparty and contact person of the first of addrs
// that is an e-mail of a counterparty (not deleted) or of one of its contact
// persons in the account; with companyID only contact persons of that
// counterparty are looked for. It finds nothing (nil, nil) when no address matches.
func linkByAddress(ctx context.Context, q sqlx.QueryerContext, accountID int64, companyID *int64, addrs []string) (company, contact *int64, err error) {
	if len(addrs) == 0 {
		return nil, nil, nil
	}
	lower := make([]string, len(addrs))
	for i, a := range addrs {
		lower[i] = strings.ToLower(a)
	}
	var found struct {
		CompanyID int64         `db:"company_id"`
		ContactID sql.NullInt64 `db:"contact_id"`
	}
	err = sqlx.GetContext(ctx, q, &found, `
		SELECT e.company_id, e.contact_id
		  FROM unnest($2::text[]) WITH ORDINALITY AS a (address, n)
		  JOIN emails e ON e.account_id = $1 AND lower(e.email) = a.address
		  JOIN companies c ON c.account_id = $1 AND c.id = e.company_id AND c.deleted_at IS NULL
		 WHERE $3::bigint IS NULL OR (e.company_id = $3 AND e.contact_id IS NOT NULL)
		 ORDER BY a.n, e.id
		 LIMIT 1`, accountID, pq.Array(lower), companyID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("link mail by address: %w", err)
	}
	company = &found.CompanyID
	if found.ContactID.Valid {
		contact = &found.ContactID.Int64
	}
	return company, contact, nil
}
