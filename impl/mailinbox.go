package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/impl/mailer"
)

// The inbox: the mailboxes (mail_accounts with an IMAP host, login and
// password) are polled for new messages of their INBOX, which are stored in
// folder 1 of mail_messages. A mailbox is due when its imap_next_poll_at has
// come and no process holds its lease (imap_lease_until).

// mailboxDue is the condition of a mail account row that it is due for a poll.
const mailboxDue = `active AND imap_host <> '' AND imap_login <> '' AND imap_secret IS NOT NULL
	AND imap_next_poll_at <= now() AND (imap_lease_until IS NULL OR imap_lease_until < now())`

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

// PollMailboxes runs one round of receiving: it takes mailboxes due for a poll
// (Concurrency at most, PerAccount of each account at most, accounts served
// longest ago first), claims each, stores the new messages of the ones it won
// and schedules their next poll. It returns how many messages it stored.
func (w *MailWorker) PollMailboxes(ctx context.Context) (int, error) {
	var due []dueRow
	// cross-account: which mailboxes of all accounts are due; the window keeps
	// at most PerAccount of each account, longest waiting first.
	err := w.scan(ctx, &due, `
		SELECT account_id, id, turn
		  FROM (SELECT account_id, id, imap_next_poll_at,
		               row_number() OVER (PARTITION BY account_id ORDER BY imap_next_poll_at, id) AS turn
		          FROM mail_accounts
		         WHERE `+mailboxDue+`) due
		 WHERE turn <= $1
		 ORDER BY turn, imap_next_poll_at, account_id, id
		 LIMIT $2`, w.cfg.PerAccount, w.scanLimit())
	if err != nil {
		return 0, fmt.Errorf("find due mailboxes: %w", err)
	}
	var boxes []mailbox
	for _, ref := range w.mailboxes.pick(due, w.cfg.Concurrency) {
		b, err := w.claimMailbox(ctx, ref)
		switch {
		case errors.Is(err, sql.ErrNoRows): // another process claimed it first
		case err != nil:
			return 0, err
		default:
			boxes = append(boxes, b)
		}
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, b := range boxes {
		wg.Go(func() {
			n, more, err := w.pollRecovering(ctx, b)
			w.finishPoll(ctx, b, more, err)
			w.cfg.Metrics.mailPolled(err, n)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return total, nil
}

// claimMailbox takes the lease of the mailbox ref if it is still due;
// sql.ErrNoRows when it is not.
func (w *MailWorker) claimMailbox(ctx context.Context, ref dueRow) (mailbox, error) {
	var b mailbox
	err := w.cfg.DB.GetContext(ctx, &b, `
		UPDATE mail_accounts
		   SET imap_lease_until = now() + $3 * interval '1 millisecond'
		 WHERE account_id = $1 AND id = $2 AND `+mailboxDue+`
		RETURNING account_id, id, user_id, address, imap_host, imap_port, imap_security, imap_login,
		          imap_secret, imap_uidvalidity, imap_last_uid, imap_failures`,
		ref.AccountID, ref.ID, w.cfg.Lease.Milliseconds())
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("claim mailbox %d: %w", ref.ID, err)
	}
	return b, err
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
	rec, cancel := recordContext(ctx)
	defer cancel()
	log := w.cfg.Log.With("mail_account", b.ID)
	failures, reason, wait := 0, "", w.cfg.PollInterval
	switch {
	case pollErr != nil:
		failures = b.Failures + 1
		wait = w.cfg.PollInterval << min(failures-1, 4)
		reason = errorText(pollErr.Error())
		log.Warn("mailbox poll failed", "failures", failures, "reason", reason)
	case more:
		wait = 0
	}
	_, err := w.cfg.DB.ExecContext(rec, `
		UPDATE mail_accounts
		   SET imap_lease_until = NULL, imap_polled_at = now(), imap_failures = $3, imap_last_error = $4,
		       imap_next_poll_at = now() + $5 * interval '1 millisecond'
		 WHERE account_id = $1 AND id = $2`, b.AccountID, b.ID, failures, reason, wait.Milliseconds())
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
	srv := mailer.Server{Host: b.Host, Port: b.Port, Security: b.Security, Login: b.Login}
	if mailer.ExposesPassword(srv.Security, srv.Host) {
		return 0, false, errors.New("the password would cross the network unencrypted (imap_security none)")
	}
	if srv.Password, err = w.cfg.Secrets.Open(b.AccountID, "imap", b.Secret); err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	stored, more, err = w.pollSession(ctx, b, srv)
	return stored, more, mailer.ExplainTimeout(ctx, w.cfg.Timeout, err)
}

// pollSession logs in to the IMAP server and stores the new messages of INBOX.
func (w *MailWorker) pollSession(ctx context.Context, b mailbox, srv mailer.Server) (stored int, more bool, err error) {
	inbox, err := w.dialer.OpenInbox(ctx, srv)
	if err != nil {
		return 0, false, err
	}
	defer inbox.Close()
	lastUID := uint32(b.LastUID)
	if !b.UIDValidity.Valid || b.UIDValidity.Int64 != int64(inbox.UIDValidity) {
		// A new UIDVALIDITY renumbers the mailbox: everything is fetched again
		// and the unique index on message_id keeps the copies already stored.
		lastUID = 0
	}
	uids, err := inbox.UIDsAbove(lastUID)
	if err != nil {
		return 0, false, err
	}
	if len(uids) > w.cfg.MaxPerPoll {
		uids, more = uids[:w.cfg.MaxPerPoll], true
	}
	if len(uids) == 0 {
		_, err := w.cfg.DB.ExecContext(ctx, `
			UPDATE mail_accounts SET imap_uidvalidity = $3, imap_last_uid = $4 WHERE account_id = $1 AND id = $2`,
			b.AccountID, b.ID, int64(inbox.UIDValidity), int64(lastUID))
		if err != nil {
			return 0, false, fmt.Errorf("record the mailbox position: %w", err)
		}
		return 0, more, nil
	}
	for batch := range slices.Chunk(uids, fetchBatch) {
		msgs, err := inbox.Fetch(batch, w.cfg.MaxFetchSize)
		if err != nil {
			return stored, more, err
		}
		n, err := w.store(ctx, b, msgs, int64(inbox.UIDValidity), int64(batch[len(batch)-1]))
		if err != nil {
			return stored, more, err
		}
		stored += n
	}
	return stored, more, nil
}

// store saves a batch of fetched messages in the inbox folder, each once, with
// a journal row for each new one, and advances the mailbox to lastUID, in one
// transaction.
func (w *MailWorker) store(ctx context.Context, b mailbox, msgs []mailer.Fetched, uidValidity, lastUID int64) (int, error) {
	tx, err := w.cfg.DB.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	owner := &Principal{AccountID: b.AccountID, UserID: b.UserID}
	var journal []journalEntry
	for _, f := range msgs {
		in := f.Message()
		row := mailRow{
			AccountID: b.AccountID, MailAccountID: b.ID, Folder: FolderInbox,
			FromName: in.From.Name, FromAddress: in.From.Address,
			ToName: mailer.DisplayNames(in.To), ToAddress: strings.Join(mailer.Addresses(in.To), ", "),
			Cc: strings.Join(mailer.Addresses(in.Cc), ", "), Bcc: strings.Join(mailer.Addresses(in.Bcc), ", "),
			Subject: in.Subject, Date: in.Date, MessageID: in.MessageID, AttachmentFlag: in.Attachment,
			SmallPartOfBody: in.Preview, Body: in.HTML,
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
			return 0, fmt.Errorf("store message UID %d: %w", f.UID, err)
		}
		journal = append(journal, journalEntry{ModuleMail, "mail", id, "receive", row.journal()})
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE mail_accounts
		   SET imap_uidvalidity = $3,
		       imap_last_uid = CASE WHEN imap_uidvalidity IS DISTINCT FROM $3 THEN $4 ELSE greatest(imap_last_uid, $4) END
		 WHERE account_id = $1 AND id = $2`, b.AccountID, b.ID, uidValidity, lastUID)
	if err != nil {
		return 0, fmt.Errorf("record the mailbox position: %w", err)
	}
	// Last: it holds the account's event counter until the commit.
	if err := writeJournal(ctx, tx, owner, journal); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return len(journal), nil
}

// incomingLinks links a received message: to the counterparty, contact person
// and deal of the message of the same mailbox it answers (In-Reply-To,
// References), else by the first of its addresses (sender, recipients, copies;
// not the mailbox's own) that is an e-mail of a counterparty or contact person.
func incomingLinks(ctx context.Context, tx *sqlx.Tx, b mailbox, in mailer.Received) (mailLinks, error) {
	if len(in.References) > 0 {
		// A struct of its own: sqlx allocates the pointers of the struct it
		// scans into before it finds that there is no row.
		var thread mailLinks
		err := tx.GetContext(ctx, &thread, `
			SELECT company_id, contact_id, deal_id FROM mail_messages
			 WHERE account_id = $1 AND mail_account_id = $2 AND message_id = ANY ($3) AND company_id IS NOT NULL
			 ORDER BY id DESC LIMIT 1`, b.AccountID, b.ID, pq.Array(in.References))
		switch {
		case err == nil:
			return thread, nil
		case !errors.Is(err, sql.ErrNoRows):
			return mailLinks{}, fmt.Errorf("link by thread: %w", err)
		}
	}
	var addrs []string
	own := strings.ToLower(b.Address)
	for _, a := range append([]string{in.From.Address}, mailer.Addresses(in.To, in.Cc, in.Bcc)...) {
		if a != "" && strings.ToLower(a) != own {
			addrs = append(addrs, a)
		}
	}
	var links mailLinks
	var err error
	links.CompanyID, links.ContactID, err = linkByAddress(ctx, tx, b.AccountID, nil, addrs)
	return links, err
}
