package impl

import (
	"cmp"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/impl/mailer"
)

// The mail worker delivers the outbox (mailoutbox.go) and polls the mailboxes
// (mailinbox.go) of every account, in any number of processes over one
// database. Each round of either loop is:
//
//  1. a scheduling scan, the only statements of the worker that read more
//     than one account: which messages or mailboxes are due (or whose lease
//     ran out), at most PerAccount of each account. Of these the round takes
//     every account's first before any account's second, and among accounts
//     those the process served longest ago (or never) first, so that an
//     account with many due cannot hold back another's by more than a round;
//  2. for each, a conditional claim of that one row, filtered by its account,
//     which exactly one process wins (the loser's UPDATE finds the row no
//     longer due and changes nothing);
//  3. the work, and its outcome recorded on that row under the claim's lease.
//
// On Citus every statement but the scans therefore runs on one shard.

// MailConfig configures the mail worker: delivery of the outbox over SMTP and
// polling of the mailboxes over IMAP. Zero durations and counts take the
// defaults named on each field.
type MailConfig struct {
	DB      *sqlx.DB
	Log     *slog.Logger
	Secrets *mailer.SecretBox // required: the worker decrypts the mail account passwords
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
	// at once by this process: the size of a round (4).
	Concurrency int
	// PerAccount is the number of one account's messages, and of its mailboxes,
	// that a round takes at most (2, at most Concurrency).
	PerAccount int
	// MaxFetchSize is the size above which a received message is stored with its
	// header only (25 MiB).
	MaxFetchSize int64
	// MaxPerPoll is the number of new messages one poll stores at most; the rest
	// follow in the next poll, which is then due at once (500).
	MaxPerPoll int
	// TLSConfig holds the roots that verify mail servers (nil: the system's).
	TLSConfig *tls.Config
	// Metrics, when set, counts the delivery attempts and polls by result.
	Metrics *Metrics
}

// MailWorker delivers the outbox and polls the mailboxes. Any number of
// processes may run one over the same database: each message and mailbox is
// claimed by one conditional UPDATE of its row and held under a lease.
type MailWorker struct {
	cfg       MailConfig
	dialer    *mailer.Dialer
	outbox    turns // of the outbox's rounds
	mailboxes turns // of the polls' rounds
}

// NewMailWorker checks cfg and fills in its defaults.
func NewMailWorker(cfg MailConfig) (*MailWorker, error) {
	if cfg.DB == nil {
		return nil, errors.New("mail worker: MailConfig.DB is required")
	}
	if cfg.Secrets == nil {
		return nil, fmt.Errorf("mail worker: %w", mailer.ErrNoSecretKey)
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
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = 2
	}
	cfg.PerAccount = min(cfg.PerAccount, cfg.Concurrency)
	if cfg.MaxFetchSize <= 0 {
		cfg.MaxFetchSize = 25 << 20
	}
	if cfg.MaxPerPoll <= 0 {
		cfg.MaxPerPoll = 500
	}
	return &MailWorker{cfg: cfg, dialer: &mailer.Dialer{TLSConfig: cfg.TLSConfig}}, nil
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
// otherwise, with backoff and one log line per change while it fails (runRounds).
func (w *MailWorker) loop(ctx context.Context, what string, idle time.Duration, step func(context.Context) (int, error)) {
	runRounds(ctx, w.cfg.Log, "mail worker ("+what+")", idle, step)
}

// scan runs a scheduling scan, one of the few statements that read every
// account (each marked "cross-account" where it is written), into dest. On
// Citus a pool may refuse statements that touch more than one shard
// (citus.multi_task_query_log_level = error, as the tests set it to prove
// that every other statement runs on one); a scan lifts that for its own
// transaction. On plain PostgreSQL the setting is an unused placeholder.
func (w *MailWorker) scan(ctx context.Context, dest any, query string, args ...any) error {
	tx, err := w.cfg.DB.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL citus.multi_task_query_log_level = 'off'`); err != nil {
		return fmt.Errorf("allow a scan over every shard: %w", err)
	}
	if err := tx.SelectContext(ctx, dest, query, args...); err != nil {
		return err
	}
	return tx.Commit()
}

// scanLimit is the number of due rows a scheduling scan reads at most: the
// candidates of a round, among which turns picks Concurrency.
func (w *MailWorker) scanLimit() int { return max(64, 4*w.cfg.Concurrency) }

// dueRow is a candidate of a scheduling scan: a row keyed by (account_id, id),
// and its turn in its account (1 for the account's longest waiting row).
type dueRow struct {
	AccountID int64 `db:"account_id"`
	ID        int64 `db:"id"`
	Turn      int   `db:"turn"`
}

// turns remembers the round of one loop in which this process last served
// each account. Ordering by the turn within the account alone would not be
// fair across rounds: once an account's oldest message is sent, its next one
// is its first again and still older than another account's only one.
type turns struct {
	mu     sync.Mutex
	round  uint64
	served map[int64]uint64 // account → round
}

// pick takes n of the candidates (as a scan gives them: by turn, then longest
// waiting first): by turn, then their account's last round served (never
// served first), then as given; it records their accounts as served in this
// round.
func (t *turns) pick(due []dueRow, n int) []dueRow {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.round++
	if t.served == nil {
		t.served = map[int64]uint64{}
	}
	slices.SortStableFunc(due, func(a, b dueRow) int {
		if a.Turn != b.Turn {
			return cmp.Compare(a.Turn, b.Turn)
		}
		return cmp.Compare(t.served[a.AccountID], t.served[b.AccountID])
	})
	due = due[:min(n, len(due))]
	for _, d := range due {
		t.served[d.AccountID] = t.round
	}
	if len(t.served) > 10_000 { // an account not served for long is as good as never served
		maps.DeleteFunc(t.served, func(_ int64, r uint64) bool { return r+1000 < t.round })
	}
	return due
}

// recordContext is the context in which an outcome is recorded: it outlives
// ctx (a process stopping still records what happened, so that a message the
// server accepted is not sent again) by 10 seconds at most.
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// errorText is the text of a failure as last_error and imap_last_error keep it.
func errorText(s string) string { return mailer.TruncateRunes(s, 1000) }
