package impl

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
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

// maxRecipients caps the addresses of one message (to, cc and bcc together).
const maxRecipients = 100

// outgoingMail is a message of POST /mail/send, decoded and checked.
type outgoingMail struct {
	subject, html string
	to, cc, bcc   []*mail.Address
}

// MailSend implements POST /mail/send: the message is checked, composed and
// stored in the sent folder as queued, in one transaction with its journal row;
// the mail worker delivers it.
func (s *Server) MailSend(ctx context.Context, req gen.MailSendRequestObject) (gen.MailSendResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body.Mail
	m, err := decodeOutgoingMail(in)
	if err != nil {
		return nil, err
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
			addresses(m.to, m.cc, m.bcc))
		if err != nil {
			return err
		}
		date := time.Now().Truncate(time.Second)
		messageID := newMessageID(from.Address)
		raw, text, err := composeMail(from, m, date, messageID)
		if err != nil {
			return err
		}
		row := mailRow{
			AccountID: p.AccountID, MailAccountID: mailAccountID, Folder: FolderSent,
			FromName: from.Name, FromAddress: from.Address,
			ToName: recipientNames(m.to), ToAddress: strings.Join(addresses(m.to), ", "),
			Cc: strings.Join(addresses(m.cc), ", "), Bcc: strings.Join(addresses(m.bcc), ", "),
			Subject: m.subject, Date: date, mailLinks: links, MessageID: messageID,
			SmallPartOfBody: preview(text), Body: m.html, CreatedBy: &p.UserID,
		}
		var id int64
		err = tx.GetContext(ctx, &id, `
			INSERT INTO mail_messages (account_id, mail_account_id, folder, from_name, from_address, to_name, to_address,
				cc, bcc, subject, date, company_id, contact_id, deal_id, message_id, attachment_flag, small_part_of_body,
				body, delivery_state, attempts, next_attempt_at, raw_message, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, false, $16, $17,
				'queued', 0, now(), $18, $19)
			RETURNING id`,
			row.AccountID, row.MailAccountID, row.Folder, row.FromName, row.FromAddress, row.ToName, row.ToAddress,
			row.Cc, row.Bcc, row.Subject, row.Date, row.CompanyID, row.ContactID, row.DealID, row.MessageID,
			row.SmallPartOfBody, row.Body, raw, row.CreatedBy)
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
	return gen.MailSend200JSONResponse(envelope(gen.StatusSuccess, &code, "", "")), nil
}

// mailLinks are the counterparty, contact person and deal a message concerns.
type mailLinks struct {
	CompanyID *int64 `json:"company_id"`
	ContactID *int64 `json:"contact_id"`
	DealID    *int64 `json:"deal_id"`
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

// decodeOutgoingMail decodes subject and body and parses the addresses, refusing
// anything that could not go into a message header as it is.
func decodeOutgoingMail(in gen.MailMessageInput) (*outgoingMail, error) {
	m := &outgoingMail{}
	var err error
	if m.subject, err = decodeMailText("mail.subject", in.Subject); err != nil {
		return nil, err
	}
	if i := strings.IndexFunc(m.subject, unicode.IsControl); i >= 0 {
		return nil, badRequest("mail.subject: must not contain line breaks or other control characters")
	}
	if m.html, err = decodeMailText("mail.body", in.Body); err != nil {
		return nil, err
	}
	if m.to, err = parseRecipients("mail.to_address", in.ToAddress); err != nil {
		return nil, err
	}
	if len(m.to) == 0 {
		return nil, badRequest("mail.to_address: at least one address is required")
	}
	if m.cc, err = parseRecipients("mail.cc", str(in.Cc)); err != nil {
		return nil, err
	}
	if m.bcc, err = parseRecipients("mail.bcc", str(in.Bcc)); err != nil {
		return nil, err
	}
	if n := len(m.to) + len(m.cc) + len(m.bcc); n > maxRecipients {
		return nil, badRequest("mail: %d recipients, at most %d are allowed", n, maxRecipients)
	}
	return m, nil
}

// decodeMailText decodes a Base64 field of POST /mail/send: the standard or the
// URL-safe alphabet, with or without padding, into UTF-8 text.
func decodeMailText(field, encoded string) (string, error) {
	raw, err := decodeBase64(encoded)
	if err != nil {
		return "", badRequest("%s: not valid Base64", field)
	}
	if !utf8.Valid(raw) {
		return "", badRequest("%s: the decoded text is not UTF-8", field)
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return "", badRequest("%s: the decoded text contains a NUL character", field)
	}
	return string(raw), nil
}

// mailboxAddress is the form of an address this server sends to: ASCII, no
// white space, a dot in the domain (as EmailAddress in the contract).
var mailboxAddress = regexp.MustCompile(`^[!#-'*+\-/-9=?A-Z^-~.]+@[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?\.[A-Za-z0-9\-]+$`)

// parseRecipients parses a comma-separated list of addresses ("a@x.example",
// "Name <a@x.example>"); empty text is an empty list.
func parseRecipients(field, list string) ([]*mail.Address, error) {
	if strings.ContainsAny(list, "\r\n") {
		return nil, badRequest("%s: must not contain line breaks", field)
	}
	if strings.IndexFunc(list, unicode.IsControl) >= 0 {
		return nil, badRequest("%s: must not contain control characters", field)
	}
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	addrs, err := mail.ParseAddressList(list)
	if err != nil {
		return nil, badRequest("%s: not a valid address or comma-separated list of addresses", field)
	}
	for i, a := range addrs {
		if len(a.Address) > 254 || !mailboxAddress.MatchString(a.Address) {
			return nil, badRequest("%s: address %d is not of the form local@domain.tld (ASCII, no spaces)", field, i+1)
		}
	}
	return addrs, nil
}

// addresses lists the addresses of the lists, in order.
func addresses(lists ...[]*mail.Address) []string {
	var out []string
	for _, l := range lists {
		for _, a := range l {
			out = append(out, a.Address)
		}
	}
	return out
}

// recipientNames is to_name of a message: the recipients as a reader names
// them (the display name, or the address of one without a name), or "" when no
// recipient has a name.
func recipientNames(list []*mail.Address) string {
	named := false
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = a.Address
		if name := strings.TrimSpace(a.Name); name != "" {
			parts[i], named = name, true
		}
	}
	if !named {
		return ""
	}
	return strings.Join(parts, ", ")
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
	var contactCompany, dealCompany int64
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
		args := sqlArgs{}
		query := fmt.Sprintf(`SELECT company_id FROM deals d WHERE d.account_id = %s AND d.id = %s AND %s`,
			args.add(p.AccountID), args.add(*in.DealID), p.responsibleFilter("d.user_id", &args))
		err := tx.GetContext(ctx, &dealCompany, query, args...)
		if errors.Is(err, sql.ErrNoRows) {
			return out, badRequest("%s", constraintErrors["mail_messages_deal_fk"])
		}
		if err != nil {
			return out, fmt.Errorf("look up deal: %w", err)
		}
	}
	switch {
	case out.CompanyID != nil:
	case in.ContactID != nil:
		out.CompanyID = &contactCompany
	case in.DealID != nil:
		out.CompanyID = &dealCompany
	}
	if out.CompanyID != nil {
		args := sqlArgs{}
		query := fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM companies c WHERE c.account_id = %s AND c.id = %s AND c.deleted_at IS NULL AND %s)`,
			args.add(p.AccountID), args.add(*out.CompanyID), p.responsibleFilter("c.user_id", &args))
		var visible bool
		if err := tx.GetContext(ctx, &visible, query, args...); err != nil {
			return out, fmt.Errorf("look up counterparty: %w", err)
		}
		if !visible {
			return out, badRequest("%s", constraintErrors["mail_messages_company_fk"])
		}
	}
	if in.ContactID != nil && contactCompany != *out.CompanyID {
		return out, badRequest("%s", constraintErrors["mail_messages_company_contact_fk"])
	}
	if in.DealID != nil && dealCompany != *out.CompanyID {
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
		  JOIN companies c ON c.account_id = e.account_id AND c.id = e.company_id AND c.deleted_at IS NULL
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

// newMessageID returns a new Message-ID, with angle brackets, in the domain of
// the sender's address.
func newMessageID(from string) string {
	var r [16]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
	domain := from[strings.LastIndexByte(from, '@')+1:]
	if domain == "" || domain == from {
		domain = "crm.invalid"
	}
	return "<crm." + hex.EncodeToString(r[:]) + "@" + domain + ">"
}

// composeMail writes the MIME text of a message: multipart/alternative with the
// plain text derived from the HTML body, then the HTML body, both UTF-8 and
// quoted-printable. Bcc recipients are not in the header. It also returns the
// plain text.
func composeMail(from *mail.Address, m *outgoingMail, date time.Time, messageID string) (raw []byte, text string, err error) {
	var h gomail.Header
	h.SetDate(date)
	h.SetAddressList("From", []*gomail.Address{from})
	h.SetAddressList("To", m.to)
	h.SetAddressList("Cc", m.cc)
	h.SetSubject(m.subject)
	h.Set("Message-Id", messageID)
	text = htmlToText(m.html)
	var buf bytes.Buffer
	w, err := gomail.CreateInlineWriter(&buf, h)
	if err != nil {
		return nil, "", fmt.Errorf("compose mail: %w", err)
	}
	for _, part := range []struct{ contentType, body string }{{"text/plain", text}, {"text/html", m.html}} {
		var ph gomail.InlineHeader
		ph.SetContentType(part.contentType, map[string]string{"charset": "utf-8"})
		pw, err := w.CreatePart(ph)
		if err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
		if _, err := pw.Write([]byte(part.body)); err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
		if err := pw.Close(); err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("compose mail: %w", err)
	}
	return buf.Bytes(), text, nil
}
