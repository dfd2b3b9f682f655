package impl

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/jmoiron/sqlx"
)

// MailConfig configures the mail worker: delivery of the outbox over SMTP and
// polling of the mailboxes over IMAP. Zero durations and counts take the
// defaults named on each field.
type MailConfig struct {
	DB      *sqlx.DB
	Log     *slog.Logger
	Secrets *SecretBox // required: the worker decrypts the mail account passwords
	// OutboxInterval is how long the worker waits before it looks at the outbox
	// again after finding nothing due (2 s).
	OutboxInterval time.Duration
	// PollInterval is how often each mailbox is polled (1 min); after a failed poll
	// the wait doubles with each failure in a row, up to 16 times.
	PollInterval time.Duration
	// Timeout bounds one SMTP delivery or one IMAP poll, connection included (2 min).
	Timeout time.Duration
	// Lease is how long a claimed message or mailbox stays the claiming process's;
	// when it runs out (the process died) another process takes it over
	// (5 min, and always more than Timeout).
	Lease time.Duration
	// MaxAttempts is the number of delivery attempts before a message that keeps
	// failing temporarily is marked failed (8).
	MaxAttempts int
	// RetryBase and RetryMax shape the backoff: after attempt n the next one is
	// due RetryBase·2^(n-1) later, at most RetryMax (1 min, 1 h), ±10 %.
	RetryBase time.Duration
	RetryMax  time.Duration
	// Concurrency is the number of messages delivered, and of mailboxes polled,
	// at once by this process (4).
	Concurrency int
	// MaxFetchSize is the size above which a received message is stored with its
	// header only (25 MiB).
	MaxFetchSize int64
	// MaxPerPoll is the number of new messages one poll stores at most; the rest
	// follow in the next poll, which is then due at once (500).
	MaxPerPoll int
	// TLSConfig holds the roots that verify mail servers (nil: the system's).
	TLSConfig *tls.Config
}

// MailWorker delivers the outbox and polls the mailboxes. Any number of
// processes may run one over the same database: messages and mailboxes are
// claimed with row locks taken with SKIP LOCKED and held as leases.
type MailWorker struct {
	cfg MailConfig
}

// NewMailWorker checks cfg and fills in its defaults.
func NewMailWorker(cfg MailConfig) (*MailWorker, error) {
	if cfg.DB == nil {
		return nil, errors.New("mail worker: MailConfig.DB is required")
	}
	if cfg.Secrets == nil {
		return nil, fmt.Errorf("mail worker: %w", ErrNoSecretKey)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.OutboxInterval, 2*time.Second)
	def(&cfg.PollInterval, time.Minute)
	def(&cfg.Timeout, 2*time.Minute)
	def(&cfg.Lease, 5*time.Minute)
	def(&cfg.RetryBase, time.Minute)
	def(&cfg.RetryMax, time.Hour)
	if cfg.Lease <= cfg.Timeout {
		cfg.Lease = cfg.Timeout + time.Minute
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.MaxFetchSize <= 0 {
		cfg.MaxFetchSize = 25 << 20
	}
	if cfg.MaxPerPoll <= 0 {
		cfg.MaxPerPoll = 500
	}
	return &MailWorker{cfg: cfg}, nil
}

// Run delivers the outbox and polls the mailboxes until ctx ends.
func (w *MailWorker) Run(ctx context.Context) {
	w.cfg.Log.Info("mail worker started")
	var wg sync.WaitGroup
	wg.Go(func() { w.loop(ctx, "deliver outbox", w.cfg.OutboxInterval, w.DeliverOutbox) })
	wg.Go(func() { w.loop(ctx, "poll mailboxes", min(w.cfg.PollInterval, 5*time.Second), w.PollMailboxes) })
	wg.Wait()
	w.cfg.Log.Info("mail worker stopped")
}

// loop runs step until ctx ends, at once again while it finds work, after idle
// otherwise.
func (w *MailWorker) loop(ctx context.Context, what string, idle time.Duration, step func(context.Context) (int, error)) {
	for ctx.Err() == nil {
		n, err := step(ctx)
		if err != nil && ctx.Err() == nil {
			w.cfg.Log.Error("mail worker", "step", what, "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(idle):
		}
	}
}

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
	Active        bool   `db:"active"`
	Host          string `db:"smtp_host"`
	Port          int    `db:"smtp_port"`
	Security      string `db:"smtp_security"`
	Login         string `db:"smtp_login"`
	Secret        []byte `db:"smtp_secret"`
}

// DeliverOutbox claims the messages due for delivery (as many as it delivers at
// once), delivers them and records each outcome. It returns how many it claimed.
func (w *MailWorker) DeliverOutbox(ctx context.Context) (int, error) {
	if err := w.expireLeases(ctx); err != nil {
		return 0, err
	}
	leaseID := rand.Int64()
	var msgs []outboxMessage
	err := w.cfg.DB.SelectContext(ctx, &msgs, `
		UPDATE mail_messages m
		   SET delivery_state = 'sending', attempts = m.attempts + 1, lease_id = $1,
		       lease_until = now() + $2 * interval '1 millisecond'
		  FROM (SELECT account_id, id FROM mail_messages
		         WHERE delivery_state = 'queued' AND next_attempt_at <= now()
		         ORDER BY next_attempt_at, id
		         LIMIT $3
		           FOR UPDATE SKIP LOCKED) due,
		       mail_accounts a
		 WHERE m.account_id = due.account_id AND m.id = due.id
		   AND a.account_id = m.account_id AND a.id = m.mail_account_id
		RETURNING m.account_id, m.id, m.mail_account_id, m.attempts, m.from_address, m.to_address, m.cc, m.bcc,
		          a.active, a.smtp_host, a.smtp_port, a.smtp_security, a.smtp_login, a.smtp_secret`,
		leaseID, w.cfg.Lease.Milliseconds(), w.cfg.Concurrency)
	if err != nil {
		return 0, fmt.Errorf("claim outbox: %w", err)
	}
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Go(func() { w.deliver(ctx, leaseID, m) })
	}
	wg.Wait()
	return len(msgs), nil
}

// expireLeases returns the messages whose delivering process stopped during an
// attempt to the queue (or marks them failed when that was the last attempt).
func (w *MailWorker) expireLeases(ctx context.Context) error {
	_, err := w.cfg.DB.ExecContext(ctx, `
		UPDATE mail_messages
		   SET delivery_state = CASE WHEN attempts >= $1 THEN 'failed' ELSE 'queued' END,
		       last_error = 'the process delivering it stopped during attempt ' || attempts,
		       next_attempt_at = now(), lease_id = NULL, lease_until = NULL
		 WHERE delivery_state = 'sending' AND lease_until < now()`, w.cfg.MaxAttempts)
	if err != nil {
		return fmt.Errorf("expire outbox leases: %w", err)
	}
	return nil
}

// deliveryError is a failure of one delivery attempt; permanent ones are not retried.
type deliveryError struct {
	permanent bool
	reason    string
}

func (e *deliveryError) Error() string { return e.reason }

func permanentError(format string, args ...any) error {
	return &deliveryError{permanent: true, reason: fmt.Sprintf(format, args...)}
}

// classify tells a permanent failure (an SMTP 5xx reply, a refused
// configuration) from a temporary one (4xx, network, timeout).
func classify(err error) *deliveryError {
	var de *deliveryError
	if errors.As(err, &de) {
		return de
	}
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return &deliveryError{permanent: se.Code/100 == 5, reason: se.Error()}
	}
	return &deliveryError{reason: err.Error()}
}

// deliver makes one delivery attempt of a claimed message and records its outcome.
func (w *MailWorker) deliver(ctx context.Context, leaseID int64, m outboxMessage) {
	err := w.sendRecovering(ctx, m)
	// The outcome is recorded even when ctx ended meanwhile (shutdown): a
	// message the server accepted must not be sent again.
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var res sql.Result
	log := w.cfg.Log.With("mail_message", m.ID, "mail_account", m.MailAccountID, "attempt", m.Attempts)
	switch {
	case err == nil:
		res, err = w.cfg.DB.ExecContext(rec, `
			UPDATE mail_messages
			   SET delivery_state = 'sent', sent_at = now(), last_error = '', raw_message = NULL,
			       next_attempt_at = NULL, lease_id = NULL, lease_until = NULL
			 WHERE account_id = $1 AND id = $2 AND lease_id = $3 AND delivery_state = 'sending'`,
			m.AccountID, m.ID, leaseID)
		log.Info("mail sent")
	default:
		de := classify(err)
		reason := truncateRunes(de.reason, 1000)
		state, next := "queued", w.backoff(m.Attempts)
		switch {
		case de.permanent:
			state = "failed"
		case m.Attempts >= w.cfg.MaxAttempts:
			state, reason = "failed", truncateRunes(fmt.Sprintf("gave up after %d attempts: %s", m.Attempts, de.reason), 1000)
		}
		res, err = w.cfg.DB.ExecContext(rec, `
			UPDATE mail_messages
			   SET delivery_state = $4, last_error = $5,
			       next_attempt_at = CASE WHEN $4 = 'queued' THEN now() + $6 * interval '1 millisecond' END,
			       lease_id = NULL, lease_until = NULL
			 WHERE account_id = $1 AND id = $2 AND lease_id = $3 AND delivery_state = 'sending'`,
			m.AccountID, m.ID, leaseID, state, reason, next.Milliseconds())
		log.Warn("mail not sent", "state", state, "reason", reason)
	}
	if err != nil {
		log.Error("record the delivery outcome", "err", err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		log.Error("the lease of the message ran out before its outcome was recorded")
	}
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

// send delivers the message over the mail account's SMTP server.
func (w *MailWorker) send(ctx context.Context, m outboxMessage) error {
	switch {
	case !m.Active:
		return permanentError("mail account %d is disabled", m.MailAccountID)
	case m.Host == "":
		return permanentError("mail account %d has no SMTP server", m.MailAccountID)
	case m.Login != "" && m.Secret == nil:
		return permanentError("mail account %d has an SMTP login but no password", m.MailAccountID)
	case m.Login != "" && m.Security == "none" && !isLoopback(m.Host):
		return permanentError("mail account %d: the password would cross the network unencrypted (smtp_security none)", m.MailAccountID)
	}
	var password string
	if m.Login != "" {
		var err error
		if password, err = w.cfg.Secrets.Open(m.AccountID, "smtp", m.Secret); err != nil {
			return permanentError("mail account %d: %s", m.MailAccountID, err)
		}
	}
	var raw []byte
	if err := w.cfg.DB.GetContext(ctx, &raw, `SELECT raw_message FROM mail_messages WHERE account_id = $1 AND id = $2`,
		m.AccountID, m.ID); err != nil {
		return fmt.Errorf("read the message: %w", err)
	}
	if raw == nil {
		return permanentError("the message has no MIME text")
	}
	rcpts := envelopeRecipients(m.ToAddress, m.Cc, m.Bcc)

	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	err := w.sendSMTP(ctx, m, password, rcpts, raw)
	return explainTimeout(ctx, w.cfg.Timeout, err)
}

// explainTimeout names the cause of an error that ctx ending caused: the
// timeout, or the process stopping.
func explainTimeout(ctx context.Context, timeout time.Duration, err error) error {
	switch {
	case err == nil || ctx.Err() == nil:
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("timeout: no answer within %s (%w)", timeout, err)
	default:
		return fmt.Errorf("interrupted: the process is stopping (%w)", err)
	}
}

// sendSMTP connects, authenticates when the account has a login, and sends raw.
func (w *MailWorker) sendSMTP(ctx context.Context, m outboxMessage, password string, rcpts []string, raw []byte) error {
	conn, err := dialMail(ctx, m.Host, m.Port)
	if err != nil {
		return err
	}
	defer conn.Close()
	var c *smtp.Client
	switch m.Security {
	case "tls":
		c = smtp.NewClient(tls.Client(conn, w.tlsConfig(m.Host)))
	case "starttls":
		if c, err = smtp.NewClientStartTLS(conn, w.tlsConfig(m.Host)); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	default:
		c = smtp.NewClient(conn)
	}
	defer c.Close()
	c.CommandTimeout, c.SubmissionTimeout = w.cfg.Timeout, w.cfg.Timeout
	if m.Login != "" {
		var auth sasl.Client = sasl.NewPlainClient("", m.Login, password)
		if !c.SupportsAuth(sasl.Plain) && c.SupportsAuth(sasl.Login) {
			auth = sasl.NewLoginClient(m.Login, password)
		}
		if err := c.Auth(auth); err != nil {
			return fmt.Errorf("authenticate: %w", err)
		}
	}
	if err := c.SendMail(m.FromAddress, rcpts, bytes.NewReader(raw)); err != nil {
		return err
	}
	_ = c.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

// envelopeRecipients are the RCPT TO addresses: to, cc and bcc (stored as
// comma-separated addresses), each once.
func envelopeRecipients(lists ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, a := range strings.Split(l, ",") {
			a = strings.TrimSpace(a)
			if a != "" && !seen[strings.ToLower(a)] {
				seen[strings.ToLower(a)] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// dialMail connects to host:port; the connection is closed when ctx ends and
// times out at ctx's deadline.
func dialMail(ctx context.Context, host string, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return &stoppingConn{Conn: conn, stop: stop}, nil
}

// stoppingConn releases the context watch of dialMail when it is closed.
type stoppingConn struct {
	net.Conn
	stop func() bool
	once sync.Once
}

func (c *stoppingConn) Close() error {
	c.once.Do(func() { c.stop() })
	return c.Conn.Close()
}

func (w *MailWorker) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if w.cfg.TLSConfig != nil {
		cfg = w.cfg.TLSConfig.Clone()
	}
	cfg.ServerName = host
	return cfg
}

// isLoopback reports whether host is this machine, where a password in clear
// text crosses no network.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
