package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/crmservice/crm/impl/mailer"
)

// The outbox: messages of table mail_messages whose delivery_state goes
// queued → sending → sent or failed. A message is due when it is queued and
// its next_attempt_at has come; a worker delivering it holds a lease on it
// (state sending, lease_id, lease_until).

// outboxMessage is a claimed message with what its delivery needs.
type outboxMessage struct {
	AccountID     int64  `db:"account_id"`
	ID            int64  `db:"id"`
	MailAccountID int64  `db:"mail_account_id"`
	Attempts      int    `db:"attempts"`
	FromAddress   string `db:"from_address"`
	ToAddress     string `db:"to_address"`
	Cc            string `db:"cc"`
	Bcc           string `db:"bcc"`
	Raw           []byte `db:"raw_message"`
	Active        bool   `db:"active"`
	Host          string `db:"smtp_host"`
	Port          int    `db:"smtp_port"`
	Security      string `db:"smtp_security"`
	Login         string `db:"smtp_login"`
	Secret        []byte `db:"smtp_secret"`
	OwnerID       int64  `db:"owner_id"` // the mail account's user, author of the outcome's journal row
}

// DeliverOutbox runs one round of delivery: it expires the leases of
// processes that died, takes due messages (Concurrency at most, PerAccount of
// each account at most, every account's first before any account's second,
// accounts served longest ago first), claims each, delivers the ones it won
// at once and records each outcome. It returns how many messages it claimed.
func (w *MailWorker) DeliverOutbox(ctx context.Context) (int, error) {
	if err := w.expireLeases(ctx); err != nil {
		return 0, err
	}
	var due []dueRow
	// cross-account: which messages of all accounts are due; the window keeps
	// at most PerAccount of each account, oldest first.
	err := w.scan(ctx, &due, `
		SELECT account_id, id, turn
		  FROM (SELECT account_id, id, next_attempt_at,
		               row_number() OVER (PARTITION BY account_id ORDER BY next_attempt_at, id) AS turn
		          FROM mail_messages
		         WHERE delivery_state = 'queued' AND next_attempt_at <= now()) due
		 WHERE turn <= $1
		 ORDER BY turn, next_attempt_at, account_id, id
		 LIMIT $2`, w.cfg.PerAccount, w.scanLimit())
	if err != nil {
		return 0, fmt.Errorf("find due messages: %w", err)
	}
	leaseID := rand.Int64()
	var msgs []outboxMessage
	for _, ref := range w.outbox.pick(due, w.cfg.Concurrency) {
		m, err := w.claimMessage(ctx, ref, leaseID)
		switch {
		case errors.Is(err, sql.ErrNoRows): // another process claimed it first
		case err != nil:
			return 0, err
		default:
			msgs = append(msgs, m)
		}
	}
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Go(func() { w.deliver(ctx, leaseID, m) })
	}
	wg.Wait()
	return len(msgs), nil
}

// claimMessage claims the message ref under the lease leaseID if it is still
// due, and reads what its delivery needs; sql.ErrNoRows when it is no longer
// due. Of processes claiming one message at once, the row lock lets one
// through and the others find it sending.
func (w *MailWorker) claimMessage(ctx context.Context, ref dueRow, leaseID int64) (outboxMessage, error) {
	var m outboxMessage
	err := w.cfg.DB.GetContext(ctx, &m, `
		WITH claimed AS (
			UPDATE mail_messages
			   SET delivery_state = 'sending', attempts = attempts + 1, lease_id = $3,
			       lease_until = now() + $4 * interval '1 millisecond'
			 WHERE account_id = $1 AND id = $2 AND delivery_state = 'queued' AND next_attempt_at <= now()
			RETURNING account_id, id, mail_account_id, attempts, from_address, to_address, cc, bcc, raw_message)
		SELECT c.account_id, c.id, c.mail_account_id, c.attempts, c.from_address, c.to_address, c.cc, c.bcc, c.raw_message,
		       a.active, a.smtp_host, a.smtp_port, a.smtp_security, a.smtp_login, a.smtp_secret, a.user_id AS owner_id
		  FROM claimed c
		  JOIN mail_accounts a ON a.account_id = $1 AND a.id = c.mail_account_id`,
		ref.AccountID, ref.ID, leaseID, w.cfg.Lease.Milliseconds())
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("claim mail message %d: %w", ref.ID, err)
	}
	return m, err
}

// expiredLease is a message whose delivering process stopped during an attempt.
type expiredLease struct {
	AccountID int64 `db:"account_id"`
	ID        int64 `db:"id"`
	Attempts  int   `db:"attempts"`
}

// expireLeases returns the messages whose delivering process stopped during an
// attempt to the queue, due at once, or marks them failed when that was the
// last attempt.
func (w *MailWorker) expireLeases(ctx context.Context) error {
	var expired []expiredLease
	// cross-account: which messages of all accounts are under a lease that ran out.
	err := w.scan(ctx, &expired, `
		SELECT account_id, id, attempts FROM mail_messages
		 WHERE delivery_state = 'sending' AND lease_until < now()
		 ORDER BY lease_until LIMIT $1`, 100)
	if err != nil {
		return fmt.Errorf("find expired outbox leases: %w", err)
	}
	for _, m := range expired {
		state, next := "queued", sql.NullInt64{Valid: true} // due at once
		if m.Attempts >= w.cfg.MaxAttempts {
			state, next = "failed", sql.NullInt64{}
		}
		// attempts and the lease's end identify the attempt that was cut: a
		// process that expired and claimed the message again meanwhile has
		// changed both.
		reason := fmt.Sprintf("the process delivering it stopped during attempt %d", m.Attempts)
		err := w.recordOutcome(ctx, m.AccountID, m.ID, 0, outcomeJournal(state, m.Attempts, reason), `
			UPDATE mail_messages
			   SET delivery_state = $4, last_error = $5, next_attempt_at = now() + $6 * interval '1 millisecond',
			       lease_id = NULL, lease_until = NULL
			 WHERE account_id = $1 AND id = $2 AND attempts = $3 AND delivery_state = 'sending' AND lease_until < now()
			RETURNING mail_account_id`,
			m.AccountID, m.ID, m.Attempts, state, reason, next)
		if err != nil && !errors.Is(err, sql.ErrNoRows) { // no row: another process expired it first
			return fmt.Errorf("expire the lease of mail message %d: %w", m.ID, err)
		}
	}
	return nil
}

// deliver makes one delivery attempt of a claimed message and records its outcome.
func (w *MailWorker) deliver(ctx context.Context, leaseID int64, m outboxMessage) {
	err := w.sendRecovering(ctx, m)
	rec, cancel := recordContext(ctx)
	defer cancel()
	log := w.cfg.Log.With("mail_message", m.ID, "mail_account", m.MailAccountID, "attempt", m.Attempts)
	switch {
	case err == nil:
		err = w.recordOutcome(rec, m.AccountID, m.ID, m.OwnerID, outcomeJournal("sent", m.Attempts, ""), `
			UPDATE mail_messages
			   SET delivery_state = 'sent', sent_at = now(), last_error = '', raw_message = NULL,
			       next_attempt_at = NULL, lease_id = NULL, lease_until = NULL
			 WHERE account_id = $1 AND id = $2 AND lease_id = $3 AND delivery_state = 'sending'
			RETURNING mail_account_id`,
			m.AccountID, m.ID, leaseID)
		log.Info("mail sent")
		w.cfg.Metrics.mailDelivered("sent")
	default:
		de := mailer.Classify(err)
		reason := errorText(de.Reason)
		state, next := "queued", sql.NullInt64{Int64: w.backoff(m.Attempts).Milliseconds(), Valid: true}
		switch {
		case de.Permanent:
			state, next = "failed", sql.NullInt64{}
		case m.Attempts >= w.cfg.MaxAttempts:
			state, next = "failed", sql.NullInt64{}
			reason = errorText(fmt.Sprintf("gave up after %d attempts: %s", m.Attempts, de.Reason))
		}
		err = w.recordOutcome(rec, m.AccountID, m.ID, m.OwnerID, outcomeJournal(state, m.Attempts, reason), `
			UPDATE mail_messages
			   SET delivery_state = $4, last_error = $5, next_attempt_at = now() + $6 * interval '1 millisecond',
			       lease_id = NULL, lease_until = NULL
			 WHERE account_id = $1 AND id = $2 AND lease_id = $3 AND delivery_state = 'sending'
			RETURNING mail_account_id`,
			m.AccountID, m.ID, leaseID, state, reason, next)
		log.Warn("mail not sent", "state", state, "reason", reason)
		if state == "failed" {
			w.cfg.Metrics.mailDelivered("failed")
		} else {
			w.cfg.Metrics.mailDelivered("retry")
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		log.Error("the lease of the message ran out before its outcome was recorded")
	case err != nil:
		log.Error("record the delivery outcome", "err", err)
	}
}

// outcomeJournal is the journal row of a delivery outcome: sent (deliver) and
// failed (delivery_failed) are events of the feed; a message queued again for
// a later attempt is none (nil).
func outcomeJournal(state string, attempts int, reason string) *journalEntry {
	changes := map[string]any{"delivery_state": state, "attempts": attempts}
	switch state {
	case "sent":
		return &journalEntry{ModuleMail, "mail", 0, "deliver", changes}
	case "failed":
		changes["last_error"] = reason
		return &journalEntry{ModuleMail, "mail", 0, "delivery_failed", changes}
	}
	return nil
}

// recordOutcome runs update, a statement on the message (accountID, id) that
// returns its mail_account_id and finds no row when the outcome is no longer
// this worker's to record (sql.ErrNoRows), and writes the journal row of the
// outcome in the same transaction, as the mailbox owner (ownerID; 0: looked
// up) without a token.
func (w *MailWorker) recordOutcome(ctx context.Context, accountID, id, ownerID int64, entry *journalEntry, update string, args ...any) error {
	tx, err := w.cfg.DB.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	var mailbox int64
	if err := tx.GetContext(ctx, &mailbox, update, args...); err != nil {
		return err
	}
	if entry != nil {
		if ownerID == 0 {
			if err := tx.GetContext(ctx, &ownerID, `SELECT user_id FROM mail_accounts WHERE account_id = $1 AND id = $2`,
				accountID, mailbox); err != nil {
				return fmt.Errorf("find the owner of mail account %d: %w", mailbox, err)
			}
		}
		entry.recordID = id
		if err := writeJournal(ctx, tx, &Principal{AccountID: accountID, UserID: ownerID}, []journalEntry{*entry}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// backoff is the wait before the attempt after attempt n.
func (w *MailWorker) backoff(n int) time.Duration {
	d := w.cfg.RetryBase
	for i := 1; i < n && d < w.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, w.cfg.RetryMax)
	return d + time.Duration((rand.Float64()-0.5)*0.2*float64(d))
}

// sendRecovering sends m, turning a panic into a temporary failure, so that
// one message never stops the server.
func (w *MailWorker) sendRecovering(ctx context.Context, m outboxMessage) (err error) {
	defer func() {
		if v := recover(); v != nil {
			w.cfg.Log.Error("panic while sending a message", "mail_message", m.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = errors.New("internal error while sending (see the server log)")
		}
	}()
	return w.send(ctx, m)
}

// send delivers the message over the mail account's SMTP server. A mail
// account that cannot send fails the message without a connection attempt.
func (w *MailWorker) send(ctx context.Context, m outboxMessage) error {
	switch {
	case !m.Active:
		return mailer.Permanent("mail account %d is disabled", m.MailAccountID)
	case m.Host == "":
		return mailer.Permanent("mail account %d has no SMTP server", m.MailAccountID)
	case m.Login != "" && m.Secret == nil:
		return mailer.Permanent("mail account %d has an SMTP login but no password", m.MailAccountID)
	case m.Login != "" && mailer.ExposesPassword(m.Security, m.Host):
		return mailer.Permanent("mail account %d: the password would cross the network unencrypted (smtp_security none)", m.MailAccountID)
	case m.Raw == nil:
		return mailer.Permanent("the message has no MIME text")
	}
	srv := mailer.Server{Host: m.Host, Port: m.Port, Security: m.Security, Login: m.Login}
	if m.Login != "" {
		var err error
		if srv.Password, err = w.cfg.Secrets.Open(m.AccountID, "smtp", m.Secret); err != nil {
			return mailer.Permanent("mail account %d: %s", m.MailAccountID, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	err := w.dialer.Send(ctx, srv, m.FromAddress, mailer.EnvelopeRecipients(m.ToAddress, m.Cc, m.Bcc), m.Raw)
	return mailer.ExplainTimeout(ctx, w.cfg.Timeout, err)
}
