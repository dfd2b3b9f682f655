package impl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decodes the charsets of received mail, not only UTF-8
	gomail "github.com/emersion/go-message/mail"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// mailbox is a claimed mail account with what polling it needs.
type mailbox struct {
	AccountID   int64         `db:"account_id"`
	ID          int64         `db:"id"`
	UserID      int64         `db:"user_id"`
	Address     string        `db:"address"`
	Host        string        `db:"imap_host"`
	Port        int           `db:"imap_port"`
	Security    string        `db:"imap_security"`
	Login       string        `db:"imap_login"`
	Secret      []byte        `db:"imap_secret"`
	UIDValidity sql.NullInt64 `db:"imap_uidvalidity"`
	LastUID     int64         `db:"imap_last_uid"`
	Failures    int           `db:"imap_failures"`
}

// PollMailboxes claims the mailboxes due for a poll (as many as it polls at
// once), stores their new messages and schedules their next poll. It returns
// how many messages it stored.
func (w *MailWorker) PollMailboxes(ctx context.Context) (int, error) {
	var boxes []mailbox
	err := w.cfg.DB.SelectContext(ctx, &boxes, `
		UPDATE mail_accounts a
		   SET imap_lease_until = now() + $1 * interval '1 millisecond'
		  FROM (SELECT account_id, id FROM mail_accounts
		         WHERE active AND imap_host <> '' AND imap_login <> '' AND imap_secret IS NOT NULL
		           AND imap_next_poll_at <= now() AND (imap_lease_until IS NULL OR imap_lease_until < now())
		         ORDER BY imap_next_poll_at, id
		         LIMIT $2
		           FOR UPDATE SKIP LOCKED) due
		 WHERE a.account_id = due.account_id AND a.id = due.id
		RETURNING a.account_id, a.id, a.user_id, a.address, a.imap_host, a.imap_port, a.imap_security, a.imap_login,
		          a.imap_secret, a.imap_uidvalidity, a.imap_last_uid, a.imap_failures`,
		w.cfg.Lease.Milliseconds(), w.cfg.Concurrency)
	if err != nil {
		return 0, fmt.Errorf("claim mailboxes: %w", err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, b := range boxes {
		wg.Go(func() {
			n, more, err := w.pollRecovering(ctx, b)
			w.finishPoll(ctx, b, more, err)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return total, nil
}

// pollRecovering polls b, turning a panic (a library meeting input it did not
// expect) into a failed poll: mail from outside never stops the server.
func (w *MailWorker) pollRecovering(ctx context.Context, b mailbox) (stored int, more bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			w.cfg.Log.Error("panic while polling a mailbox", "mail_account", b.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = errors.New("internal error while polling (see the server log)")
		}
	}()
	return w.poll(ctx, b)
}

// finishPoll releases the mailbox and schedules its next poll: at once when
// messages are left over, after PollInterval when the poll went well, later
// with each failure in a row otherwise.
func (w *MailWorker) finishPoll(ctx context.Context, b mailbox, more bool, pollErr error) {
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	log := w.cfg.Log.With("mail_account", b.ID)
	var err error
	switch {
	case pollErr == nil:
		wait := w.cfg.PollInterval
		if more {
			wait = 0
		}
		_, err = w.cfg.DB.ExecContext(rec, `
			UPDATE mail_accounts
			   SET imap_lease_until = NULL, imap_polled_at = now(), imap_failures = 0, imap_last_error = '',
			       imap_next_poll_at = now() + $3 * interval '1 millisecond'
			 WHERE account_id = $1 AND id = $2`, b.AccountID, b.ID, wait.Milliseconds())
	default:
		failures := b.Failures + 1
		wait := w.cfg.PollInterval << min(failures-1, 4)
		reason := truncateRunes(pollErr.Error(), 1000)
		log.Warn("mailbox poll failed", "failures", failures, "reason", reason)
		_, err = w.cfg.DB.ExecContext(rec, `
			UPDATE mail_accounts
			   SET imap_lease_until = NULL, imap_polled_at = now(), imap_failures = $3, imap_last_error = $4,
			       imap_next_poll_at = now() + $5 * interval '1 millisecond'
			 WHERE account_id = $1 AND id = $2`, b.AccountID, b.ID, failures, reason, wait.Milliseconds())
	}
	if err != nil {
		log.Error("record the poll outcome", "err", err)
	}
}

// fetchBatch is the number of messages fetched, and stored, at a time.
const fetchBatch = 20

// poll stores the new messages of the mailbox's INBOX, a batch per transaction
// that also advances the mailbox's last UID, so a dropped connection loses
// nothing and repeats nothing. more tells that messages were left for the next poll.
func (w *MailWorker) poll(ctx context.Context, b mailbox) (stored int, more bool, err error) {
	if b.Security == "none" && !isLoopback(b.Host) {
		return 0, false, errors.New("the password would cross the network unencrypted (imap_security none)")
	}
	password, err := w.cfg.Secrets.Open(b.AccountID, "imap", b.Secret)
	if err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	stored, more, err = w.pollSession(ctx, b, password)
	return stored, more, explainTimeout(ctx, w.cfg.Timeout, err)
}

// pollSession logs in to the IMAP server and stores the new messages of INBOX.
func (w *MailWorker) pollSession(ctx context.Context, b mailbox, password string) (stored int, more bool, err error) {
	conn, err := dialMail(ctx, b.Host, b.Port)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	opts := &imapclient.Options{
		TLSConfig:   w.tlsConfig(b.Host),
		WordDecoder: &mime.WordDecoder{CharsetReader: message.CharsetReader},
	}
	var c *imapclient.Client
	switch b.Security {
	case "tls":
		c = imapclient.New(tls.Client(conn, opts.TLSConfig), opts)
	case "starttls":
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			return 0, false, fmt.Errorf("STARTTLS: %w", err)
		}
	default:
		c = imapclient.New(conn, opts)
	}
	defer c.Close()
	if err := c.Login(b.Login, password).Wait(); err != nil {
		return 0, false, fmt.Errorf("login: %w", err)
	}
	sel, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return 0, false, fmt.Errorf("select INBOX: %w", err)
	}
	lastUID := imap.UID(b.LastUID)
	if !b.UIDValidity.Valid || b.UIDValidity.Int64 != int64(sel.UIDValidity) {
		// A new UIDVALIDITY renumbers the mailbox: everything is fetched again
		// and the unique index on message_id keeps the copies already stored.
		lastUID = 0
	}
	var uids []imap.UID
	if sel.NumMessages > 0 {
		// "UID n:*" also answers the highest message when it is below n.
		metas, err := c.Fetch(imap.UIDSet{{Start: lastUID + 1, Stop: 0}}, &imap.FetchOptions{UID: true}).Collect()
		if err != nil {
			return 0, false, fmt.Errorf("list new messages: %w", err)
		}
		for _, m := range metas {
			if m.UID > lastUID {
				uids = append(uids, m.UID)
			}
		}
		slices.Sort(uids)
	}
	if len(uids) > w.cfg.MaxPerPoll {
		uids, more = uids[:w.cfg.MaxPerPoll], true
	}
	if len(uids) == 0 {
		_, err := w.cfg.DB.ExecContext(ctx, `
			UPDATE mail_accounts SET imap_uidvalidity = $3, imap_last_uid = $4 WHERE account_id = $1 AND id = $2`,
			b.AccountID, b.ID, int64(sel.UIDValidity), int64(lastUID))
		if err != nil {
			return 0, false, fmt.Errorf("record the mailbox position: %w", err)
		}
		return 0, more, nil
	}
	for batch := range slices.Chunk(uids, fetchBatch) {
		msgs, err := w.fetch(c, batch)
		if err != nil {
			return stored, more, err
		}
		n, err := w.store(ctx, b, msgs, int64(sel.UIDValidity), int64(batch[len(batch)-1]))
		if err != nil {
			return stored, more, err
		}
		stored += n
	}
	return stored, more, nil
}

// fetchedMessage is one message as the IMAP server gave it.
type fetchedMessage struct {
	uid          imap.UID
	internalDate time.Time
	raw          []byte // the whole message, or its header only when it is larger than MaxFetchSize
	headerOnly   bool
	attachment   bool // from the body structure, for header-only messages
}

// fetch reads the messages uids: whole, or their header and body structure
// when they are larger than MaxFetchSize.
func (w *MailWorker) fetch(c *imapclient.Client, uids []imap.UID) ([]fetchedMessage, error) {
	sizes, err := collectFetch(c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, RFC822Size: true}))
	if err != nil {
		return nil, fmt.Errorf("fetch sizes: %w", err)
	}
	var small, large []imap.UID
	for _, m := range sizes {
		if m.size > w.cfg.MaxFetchSize {
			large = append(large, m.uid)
		} else {
			small = append(small, m.uid)
		}
	}
	var out []fetchedMessage
	if len(small) > 0 {
		msgs, err := collectFetch(c.Fetch(imap.UIDSetNum(small...), &imap.FetchOptions{
			UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}},
		}))
		if err != nil {
			return nil, fmt.Errorf("fetch messages: %w", err)
		}
		for _, m := range msgs {
			out = append(out, fetchedMessage{uid: m.uid, internalDate: m.internalDate, raw: m.body})
		}
	}
	if len(large) > 0 {
		msgs, err := collectFetch(c.Fetch(imap.UIDSetNum(large...), &imap.FetchOptions{
			UID: true, InternalDate: true, BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
			BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, Peek: true}},
		}))
		if err != nil {
			return nil, fmt.Errorf("fetch message headers: %w", err)
		}
		for _, m := range msgs {
			out = append(out, fetchedMessage{uid: m.uid, internalDate: m.internalDate, raw: m.body,
				headerOnly: true, attachment: hasAttachment(m.bodyStructure)})
		}
	}
	slices.SortFunc(out, func(a, b fetchedMessage) int { return int(a.uid) - int(b.uid) })
	return out, nil
}

// fetchItem is one message of a FETCH reply (of a request for at most one body section).
type fetchItem struct {
	uid           imap.UID
	size          int64
	internalDate  time.Time
	bodyStructure imap.BodyStructure
	body          []byte
}

// collectFetch reads the reply of a FETCH. Unlike FetchCommand.Collect it stops
// at the first failed read and never reads on: once a body read has failed
// (the connection dropped), the client's own reader goroutine reads the
// connection again, and reading the body further would race with it. The
// caller then closes the client.
func collectFetch(cmd *imapclient.FetchCommand) ([]fetchItem, error) {
	var out []fetchItem
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		var it fetchItem
		for item := msg.Next(); item != nil; item = msg.Next() {
			switch d := item.(type) {
			case imapclient.FetchItemDataUID:
				it.uid = d.UID
			case imapclient.FetchItemDataRFC822Size:
				it.size = d.Size
			case imapclient.FetchItemDataInternalDate:
				it.internalDate = d.Time
			case imapclient.FetchItemDataBodyStructure:
				it.bodyStructure = d.BodyStructure
			case imapclient.FetchItemDataBodySection:
				if d.Literal == nil {
					continue
				}
				b, err := io.ReadAll(d.Literal)
				if err == nil && int64(len(b)) != d.Literal.Size() {
					err = io.ErrUnexpectedEOF // a cut connection ends a body early
				}
				if err != nil {
					return nil, err
				}
				it.body = b
			}
		}
		out = append(out, it)
	}
	return out, cmd.Close()
}

// hasAttachment applies the rule of go-message's reader to a body structure: a
// part is an attachment unless it is text or marked inline.
func hasAttachment(bs imap.BodyStructure) bool {
	found := false
	if bs == nil {
		return false
	}
	bs.Walk(func(_ []int, part imap.BodyStructure) bool {
		single, ok := part.(*imap.BodyStructureSinglePart)
		if !ok {
			return true
		}
		disp := ""
		if d := single.Disposition(); d != nil {
			disp = strings.ToLower(d.Value)
		}
		if disp == "attachment" || disp != "inline" && !strings.HasPrefix(single.MediaType(), "text/") {
			found = true
		}
		return false
	})
	return found
}

// store saves a batch of fetched messages in the inbox folder, each once, with
// a journal row for each new one, and advances the mailbox to lastUID, in one
// transaction.
func (w *MailWorker) store(ctx context.Context, b mailbox, msgs []fetchedMessage, uidValidity, lastUID int64) (int, error) {
	tx, err := w.cfg.DB.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	owner := &Principal{AccountID: b.AccountID, UserID: b.UserID}
	var journal []journalEntry
	for _, f := range msgs {
		in := parseIncoming(f)
		row := mailRow{
			AccountID: b.AccountID, MailAccountID: b.ID, Folder: FolderInbox,
			FromName: in.from.Name, FromAddress: in.from.Address,
			ToName: recipientNames(in.to), ToAddress: strings.Join(addresses(in.to), ", "),
			Cc: strings.Join(addresses(in.cc), ", "), Bcc: strings.Join(addresses(in.bcc), ", "),
			Subject: in.subject, Date: in.date, MessageID: in.messageID, AttachmentFlag: in.attachment,
			SmallPartOfBody: in.preview, Body: in.html,
		}
		if row.mailLinks, err = incomingLinks(ctx, tx, b, in); err != nil {
			return 0, err
		}
		var id int64
		err := tx.GetContext(ctx, &id, `
			INSERT INTO mail_messages (account_id, mail_account_id, folder, from_name, from_address, to_name, to_address,
				cc, bcc, subject, date, company_id, contact_id, deal_id, message_id, attachment_flag, small_part_of_body, body)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (account_id, mail_account_id, folder, message_id) WHERE message_id <> '' DO NOTHING
			RETURNING id`,
			row.AccountID, row.MailAccountID, row.Folder, row.FromName, row.FromAddress, row.ToName, row.ToAddress,
			row.Cc, row.Bcc, row.Subject, row.Date, row.CompanyID, row.ContactID, row.DealID, row.MessageID,
			row.AttachmentFlag, row.SmallPartOfBody, row.Body)
		if errors.Is(err, sql.ErrNoRows) {
			continue // stored before
		}
		if err != nil {
			return 0, fmt.Errorf("store message UID %d: %w", f.uid, err)
		}
		journal = append(journal, journalEntry{ModuleMail, "mail", id, "receive", row.journal()})
	}
	if err := writeJournal(ctx, tx, owner, journal); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE mail_accounts
		   SET imap_uidvalidity = $3,
		       imap_last_uid = CASE WHEN imap_uidvalidity IS DISTINCT FROM $3 THEN $4 ELSE greatest(imap_last_uid, $4) END
		 WHERE account_id = $1 AND id = $2`, b.AccountID, b.ID, uidValidity, lastUID)
	if err != nil {
		return 0, fmt.Errorf("record the mailbox position: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return len(journal), nil
}

// incomingMail is what is kept of a received message.
type incomingMail struct {
	from          mail.Address
	to, cc, bcc   []*mail.Address
	subject       string
	date          time.Time
	messageID     string   // with angle brackets
	references    []string // In-Reply-To and References, with angle brackets
	attachment    bool
	html, preview string
}

// maxPartSize caps the text read from one part of a received message.
const maxPartSize = 4 << 20

// parseIncoming reads a received message leniently: a header it cannot parse
// leaves its field empty, a body it cannot read leaves the body empty, and the
// message is stored all the same.
func parseIncoming(f fetchedMessage) incomingMail {
	in := incomingMail{date: f.internalDate, attachment: f.attachment}
	if in.date.IsZero() {
		in.date = time.Now()
	}
	r, err := gomail.CreateReader(bytes.NewReader(f.raw))
	if err != nil && r == nil { // nothing of it is readable: it is kept with its id only
		in.messageID = syntheticMessageID(f.raw)
		return in
	}
	defer r.Close()
	h := r.Header
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		in.from = *from[0]
	} else {
		in.from.Name, _ = h.Text("From")
	}
	in.to = lenientAddressList(h, "To")
	in.cc = lenientAddressList(h, "Cc")
	in.bcc = lenientAddressList(h, "Bcc")
	in.subject, _ = h.Subject()
	in.subject = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, in.subject)
	if d, err := h.Date(); err == nil && !d.IsZero() {
		in.date = d
	}
	if id, err := h.MessageID(); err == nil && id != "" {
		in.messageID = "<" + id + ">"
	} else {
		in.messageID = syntheticMessageID(f.raw)
	}
	for _, key := range []string{"In-Reply-To", "References"} {
		ids, _ := h.MsgIDList(key)
		for _, id := range ids {
			in.references = append(in.references, "<"+id+">")
		}
	}
	if f.headerOnly {
		return in
	}
	var text, htmlBody string
	for {
		p, err := r.NextPart()
		if err != nil && (p == nil || !message.IsUnknownCharset(err)) {
			break // io.EOF, or a part that cannot be read: keep what was read
		}
		switch ph := p.Header.(type) {
		case *gomail.AttachmentHeader:
			in.attachment = true
		case *gomail.InlineHeader:
			ct, _, _ := ph.ContentType()
			body, _ := io.ReadAll(io.LimitReader(p.Body, maxPartSize))
			switch {
			case ct == "text/plain" && text == "":
				text = strings.ToValidUTF8(string(body), "\uFFFD")
			case ct == "text/html" && htmlBody == "":
				htmlBody = strings.ToValidUTF8(string(body), "\uFFFD")
			case !strings.HasPrefix(ct, "text/"):
				in.attachment = true
			}
		}
	}
	text = strings.ReplaceAll(text, "\x00", "")
	htmlBody = strings.ReplaceAll(htmlBody, "\x00", "")
	switch {
	case htmlBody != "":
		in.html = sanitizeHTML(htmlBody)
	default:
		in.html = textToHTML(text)
	}
	if strings.TrimSpace(text) != "" {
		in.preview = preview(text)
	} else {
		in.preview = preview(htmlToText(htmlBody))
	}
	return in
}

// lenientAddressList parses an address header, keeping the addresses before
// the first one it cannot parse.
func lenientAddressList(h gomail.Header, key string) []*mail.Address {
	list, err := h.AddressList(key)
	if err == nil {
		return list
	}
	var out []*mail.Address
	for _, part := range strings.Split(h.Get(key), ",") {
		if a, err := gomail.ParseAddress(part); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// syntheticMessageID stands in for a missing Message-ID: derived from the
// message's bytes, so the same message fetched twice is still stored once.
func syntheticMessageID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "<sha256." + hex.EncodeToString(sum[:16]) + "@crm.invalid>"
}

// incomingLinks links a received message: to the counterparty, contact person
// and deal of the message of the same mailbox it answers (In-Reply-To,
// References), else by the first of its addresses (sender, recipients, copies;
// not the mailbox's own) that is an e-mail of a counterparty or contact person.
func incomingLinks(ctx context.Context, tx *sqlx.Tx, b mailbox, in incomingMail) (mailLinks, error) {
	var links mailLinks
	if len(in.references) > 0 {
		var found struct {
			CompanyID *int64 `db:"company_id"`
			ContactID *int64 `db:"contact_id"`
			DealID    *int64 `db:"deal_id"`
		}
		err := tx.GetContext(ctx, &found, `
			SELECT company_id, contact_id, deal_id FROM mail_messages
			 WHERE account_id = $1 AND mail_account_id = $2 AND message_id = ANY ($3) AND company_id IS NOT NULL
			 ORDER BY id DESC LIMIT 1`, b.AccountID, b.ID, pq.Array(in.references))
		switch {
		case err == nil:
			return mailLinks{CompanyID: found.CompanyID, ContactID: found.ContactID, DealID: found.DealID}, nil
		case !errors.Is(err, sql.ErrNoRows):
			return links, fmt.Errorf("link by thread: %w", err)
		}
	}
	var addrs []string
	own := strings.ToLower(b.Address)
	for _, a := range append([]string{in.from.Address}, addresses(in.to, in.cc, in.bcc)...) {
		if a != "" && strings.ToLower(a) != own {
			addrs = append(addrs, a)
		}
	}
	var err error
	links.CompanyID, links.ContactID, err = linkByAddress(ctx, tx, b.AccountID, nil, addrs)
	return links, err
}
