package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/webhook"
)

// The webhook worker delivers each subscription's events in the order of the
// event feed, in any number of processes over one database, as the mail
// worker does (mailworker.go):
//
//  1. a scheduling scan, its only statement across accounts: the active
//     subscriptions that are due, not leased, and behind their account's
//     event counter, at most PerAccount of each account; a round takes every
//     account's first before any account's second, accounts served longest
//     ago first;
//  2. for each, a conditional claim of its row (filtered by its account)
//     under a lease, which one process wins;
//  3. the events past its position, delivered one at a time, each outcome
//     recorded on its row under the lease (which each record renews), with a
//     row of the delivery log. A failure stops the subscription until its
//     next attempt (backoff with jitter); after GiveUpAfter of failures of one
//     event the subscription is disabled, with a journal row (an event).
//
// Delivery is at least once: a process that dies after the receiver got an
// event but before it recorded so leaves the lease to run out, and the next
// process delivers the event again with the same webhook-id.

// WebhookConfig configures the webhook worker. Zero values take the defaults
// named on each field.
type WebhookConfig struct {
	DB      *sqlx.DB
	Log     *slog.Logger
	Secrets *mailer.SecretBox // required: it opens the subscriptions' secrets
	// AllowedNetworks are destinations let through besides public addresses
	// (WEBHOOK_ALLOWED_NETWORKS).
	AllowedNetworks []netip.Prefix
	// Interval is the wait before the next scan after one that found nothing (1 s).
	Interval time.Duration
	// Timeout bounds one delivery, connection included (10 s).
	Timeout time.Duration
	// Lease is how long a claimed subscription stays the process's without a
	// record (2 × Timeout + 5 s, at least).
	Lease time.Duration
	// RetryBase and RetryMax shape the backoff: after failure n of an event the
	// next attempt is RetryBase·2^(n-1) later, at most RetryMax, ±20 % (1 min, 4 h).
	RetryBase time.Duration
	RetryMax  time.Duration
	// GiveUpAfter is how long one event may keep failing before the
	// subscription is disabled (24 h).
	GiveUpAfter time.Duration
	// Concurrency is the number of subscriptions served at once (4); PerAccount
	// the number of one account's in a round (2, at most Concurrency).
	Concurrency int
	PerAccount  int
	// Batch is the number of events a claim delivers at most before it lets
	// other subscriptions have their turn (100).
	Batch int
}

// WebhookWorker delivers the events of webhook subscriptions.
type WebhookWorker struct {
	cfg    WebhookConfig
	client *http.Client
	turns  turns
}

// NewWebhookWorker checks cfg and fills in its defaults.
func NewWebhookWorker(cfg WebhookConfig) (*WebhookWorker, error) {
	if cfg.DB == nil {
		return nil, errors.New("webhook worker: WebhookConfig.DB is required")
	}
	if cfg.Secrets == nil {
		return nil, fmt.Errorf("webhook worker: %w", mailer.ErrNoSecretKey)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Interval, time.Second)
	def(&cfg.Timeout, 10*time.Second)
	def(&cfg.RetryBase, time.Minute)
	def(&cfg.RetryMax, 4*time.Hour)
	def(&cfg.GiveUpAfter, 24*time.Hour)
	cfg.Lease = max(cfg.Lease, 2*cfg.Timeout+5*time.Second)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = 2
	}
	cfg.PerAccount = min(cfg.PerAccount, cfg.Concurrency)
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	return &WebhookWorker{cfg: cfg, client: webhook.NewGuard(cfg.AllowedNetworks).Client(cfg.Timeout)}, nil
}

// Run delivers until ctx ends; while rounds fail (the database is away) it
// logs the change of state and backs off (runRounds).
func (w *WebhookWorker) Run(ctx context.Context) {
	w.cfg.Log.Info("webhook worker started")
	runRounds(ctx, w.cfg.Log, "webhook worker", w.cfg.Interval, w.Deliver)
	w.cfg.Log.Info("webhook worker stopped")
}

// Deliver runs one round: it claims due subscriptions and delivers their
// events. It returns how many subscriptions it claimed.
func (w *WebhookWorker) Deliver(ctx context.Context) (int, error) {
	var due []dueRow
	// cross-account: which subscriptions of all accounts are due and behind
	// their account's event counter; the window keeps PerAccount of each.
	err := scanAccounts(ctx, w.cfg.DB, &due, `
		SELECT account_id, id, turn
		  FROM (SELECT w.account_id, w.id, w.next_attempt_at,
		               row_number() OVER (PARTITION BY w.account_id ORDER BY w.next_attempt_at, w.id) AS turn
		          FROM webhooks w
		          JOIN event_counters ec ON ec.account_id = w.account_id
		         WHERE w.active AND w.next_attempt_at <= now() AND (w.lease_until IS NULL OR w.lease_until < now())
		           AND ec.last > w.position) due
		 WHERE turn <= $1
		 ORDER BY turn, next_attempt_at, account_id, id
		 LIMIT $2`, w.cfg.PerAccount, max(64, 4*w.cfg.Concurrency))
	if err != nil {
		return 0, fmt.Errorf("find due webhooks: %w", err)
	}
	leaseID := rand.Int64()
	var claimed []claimedHook
	for _, ref := range w.turns.pick(due, w.cfg.Concurrency) {
		h, err := w.claim(ctx, ref, leaseID)
		switch {
		case errors.Is(err, sql.ErrNoRows): // another process claimed it first
		case err != nil:
			return 0, err
		default:
			claimed = append(claimed, h)
		}
	}
	var wg sync.WaitGroup
	for _, h := range claimed {
		wg.Go(func() { w.serveRecovering(ctx, h) })
	}
	wg.Wait()
	return len(claimed), nil
}

// scanAccounts runs a scheduling scan, a statement that reads every account,
// in a read-only transaction that lifts Citus's refusal of statements on
// several shards for itself (see MailWorker.scan).
func scanAccounts(ctx context.Context, db *sqlx.DB, dest any, query string, args ...any) error {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
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

// claimedHook is a subscription this process holds a lease on.
type claimedHook struct {
	AccountID    int64          `db:"account_id"`
	ID           int64          `db:"id"`
	URL          string         `db:"url"`
	Secret       []byte         `db:"secret"`
	Position     int64          `db:"position"`
	Attempts     int            `db:"attempts"`
	FailingSince sql.NullTime   `db:"failing_since"`
	Modules      pq.Int64Array  `db:"modules"`
	Actions      pq.StringArray `db:"actions"`
	leaseID      int64
}

// claim takes the lease of the subscription ref if it is still due.
func (w *WebhookWorker) claim(ctx context.Context, ref dueRow, leaseID int64) (claimedHook, error) {
	var h claimedHook
	err := w.cfg.DB.GetContext(ctx, &h, `
		UPDATE webhooks SET lease_id = $3, lease_until = now() + $4 * interval '1 millisecond'
		 WHERE account_id = $1 AND id = $2 AND active AND next_attempt_at <= now()
		   AND (lease_until IS NULL OR lease_until < now())
		RETURNING account_id, id, url, secret, position, attempts, failing_since, modules, actions`,
		ref.AccountID, ref.ID, leaseID, w.cfg.Lease.Milliseconds())
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("claim webhook %d: %w", ref.ID, err)
	}
	h.leaseID = leaseID
	return h, err
}

// pendingEvent is an event past a subscription's position.
type pendingEvent struct {
	Position int64          `db:"position"`
	ID       int64          `db:"id"`
	Type     string         `db:"type"`
	Body     sql.NullString `db:"body"` // NULL: not an event the subscription wants
}

// serveRecovering serves a claimed subscription; a panic releases nothing
// (the lease runs out) and never stops the server.
func (w *WebhookWorker) serveRecovering(ctx context.Context, h claimedHook) {
	defer func() {
		if v := recover(); v != nil {
			w.cfg.Log.Error("panic while delivering webhooks", "webhook", h.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	if err := w.serve(ctx, h); err != nil && ctx.Err() == nil {
		w.cfg.Log.Error("deliver webhooks", "webhook", h.ID, "err", err)
	}
}

// serve delivers the events of a claimed subscription, up to Batch, and
// releases it.
func (w *WebhookWorker) serve(ctx context.Context, h claimedHook) error {
	log := w.cfg.Log.With("account", h.AccountID, "webhook", h.ID)
	if _, err := w.cfg.DB.ExecContext(ctx, `DELETE FROM webhook_deliveries
		WHERE account_id = $1 AND webhook_id = $2 AND at < now() - interval '30 days'`, h.AccountID, h.ID); err != nil {
		return fmt.Errorf("prune the delivery log: %w", err)
	}
	var events []pendingEvent
	err := w.cfg.DB.SelectContext(ctx, &events, `
		SELECT j.position, j.id, j.entity || '.' || j.action AS type,
		       CASE WHEN (cardinality($3::smallint[]) = 0 OR j.module = ANY ($3::smallint[]))
		             AND (cardinality($4::text[]) = 0 OR j.action = ANY ($4::text[]))
		            THEN json_build_object(
		                'type', j.entity || '.' || j.action,
		                'timestamp', to_char(j.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		                'data', json_build_object(
		                    'id', j.id, 'date', to_char(j.at AT TIME ZONE a.time_zone, 'YYYY-MM-DD HH24:MI:SS'),
		                    'user_id', j.user_id, 'user_name', coalesce(u.name, ''), 'token_id', j.token_id,
		                    'module', j.module, 'entity', j.entity, 'record_id', j.record_id, 'action', j.action,
		                    'changes', j.changes))::text END AS body
		  FROM journal j
		  JOIN accounts a ON a.id = $1
		  LEFT JOIN users u ON u.account_id = $1 AND u.id = j.user_id
		 WHERE j.account_id = $1 AND j.position > $2
		 ORDER BY j.position
		 LIMIT $5`, h.AccountID, h.Position, pq.Array(h.Modules), pq.Array(h.Actions), w.cfg.Batch)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	position := h.Position
	for _, ev := range events {
		if ctx.Err() != nil {
			break // the lease runs out; the next claim goes on from position
		}
		if !ev.Body.Valid {
			position = ev.Position
			continue
		}
		msg := webhook.Message{ID: eventWebhookID(ev.ID), Body: []byte(ev.Body.String)}
		res := deliverWith(ctx, w.cfg.Secrets, w.client, h.AccountID, h.URL, h.Secret, msg)
		rec, cancel := recordContext(ctx)
		if res.Delivered {
			err = w.recordDelivered(rec, h, ev, res)
			cancel()
			if err != nil {
				return err
			}
			position, h.Attempts, h.FailingSince = ev.Position, 0, sql.NullTime{}
			continue
		}
		err = w.recordFailed(rec, &h, position, ev, res, log)
		cancel()
		return err
	}
	// Done for this round: the events not wanted are passed, the lease released.
	rec, cancel := recordContext(ctx)
	defer cancel()
	_, err = w.cfg.DB.ExecContext(rec, `
		UPDATE webhooks SET position = greatest(position, $4), lease_id = NULL, lease_until = NULL
		 WHERE account_id = $1 AND id = $2 AND lease_id = $3`, h.AccountID, h.ID, h.leaseID, position)
	if err != nil {
		return fmt.Errorf("release webhook: %w", err)
	}
	return nil
}

// eventWebhookID is the webhook-id of an event: the same at every attempt
// and for every subscription, so that a receiver can drop repeats.
func eventWebhookID(id int64) string { return "evt_" + strconv.FormatInt(id, 10) }

// recordDelivered moves the subscription past ev, renews the lease and logs
// the delivery, in one transaction.
func (w *WebhookWorker) recordDelivered(ctx context.Context, h claimedHook, ev pendingEvent, res webhook.Result) error {
	tx, err := w.cfg.DB.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.GetContext(ctx, &id, `
		UPDATE webhooks SET position = $4, attempts = 0, failing_since = NULL, lease_until = now() + $5 * interval '1 millisecond'
		 WHERE account_id = $1 AND id = $2 AND lease_id = $3
		RETURNING id`, h.AccountID, h.ID, h.leaseID, ev.Position, w.cfg.Lease.Milliseconds())
	if errors.Is(err, sql.ErrNoRows) {
		return errors.New("the lease ran out (or the subscription was deleted) before the delivery was recorded")
	}
	if err != nil {
		return fmt.Errorf("record the delivery of event %d: %w", ev.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, type, attempt, outcome, status_code, duration_ms)
		VALUES ($1, $2, $3, $4, $5, 'delivered', $6, $7)`,
		h.AccountID, h.ID, ev.ID, ev.Type, h.Attempts+1, res.StatusCode, res.Duration.Milliseconds()); err != nil {
		return fmt.Errorf("log the delivery of event %d: %w", ev.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// recordFailed logs a failed attempt of ev, schedules the next one and
// releases the lease; after GiveUpAfter of failures it disables the
// subscription, with a journal row.
func (w *WebhookWorker) recordFailed(ctx context.Context, h *claimedHook, position int64, ev pendingEvent, res webhook.Result, log *slog.Logger) error {
	attempt := h.Attempts + 1
	now := time.Now()
	since := now
	if h.FailingSince.Valid {
		since = h.FailingSince.Time
	}
	giveUp := now.Sub(since) >= w.cfg.GiveUpAfter
	reason := ""
	if giveUp {
		reason = errorText(fmt.Sprintf("event %d failed for %s (%d attempts), last: %s", ev.ID,
			now.Sub(since).Round(time.Minute), attempt, res.Error))
	}
	tx, err := w.cfg.DB.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	// Citus refuses now() beside a column in an UPDATE: what depends on the row
	// is decided here, from the claim.
	set := "next_attempt_at = now() + $6 * interval '1 millisecond'"
	if !h.FailingSince.Valid {
		set += ", failing_since = now()"
	}
	if giveUp {
		set += ", active = false, disabled_reason = $7, disabled_at = now()"
	} else {
		set += ", disabled_reason = $7"
	}
	var id int64
	err = tx.GetContext(ctx, &id, `
		UPDATE webhooks
		   SET position = greatest(position, $4), attempts = $5, lease_id = NULL, lease_until = NULL, `+set+`
		 WHERE account_id = $1 AND id = $2 AND lease_id = $3
		RETURNING id`,
		h.AccountID, h.ID, h.leaseID, position, attempt, w.backoff(attempt).Milliseconds(), reason)
	if errors.Is(err, sql.ErrNoRows) {
		return errors.New("the lease ran out (or the subscription was deleted) before the failure was recorded")
	}
	if err != nil {
		return fmt.Errorf("record the failure of event %d: %w", ev.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, type, attempt, outcome, status_code, error, duration_ms)
		VALUES ($1, $2, $3, $4, $5, 'failed', $6, $7, $8)`,
		h.AccountID, h.ID, ev.ID, ev.Type, attempt, nullStatus(res.StatusCode), errorText(res.Error), res.Duration.Milliseconds()); err != nil {
		return fmt.Errorf("log the failure of event %d: %w", ev.ID, err)
	}
	if giveUp {
		// The change is an event of the account, made by the server (no user).
		if err := writeJournal(ctx, tx, &Principal{AccountID: h.AccountID}, []journalEntry{{ModuleWebhooks, "webhook", h.ID, "update",
			map[string][2]any{"active": {true, false}, "disabled_reason": {"", reason}}}}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if giveUp {
		log.Warn("webhook disabled", "reason", reason)
	} else {
		log.Info("webhook delivery failed", "event", ev.ID, "attempt", attempt, "error", res.Error)
	}
	return nil
}

// backoff is the wait after failure n of an event.
func (w *WebhookWorker) backoff(n int) time.Duration {
	d := w.cfg.RetryBase
	for i := 1; i < n && d < w.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, w.cfg.RetryMax)
	return d + time.Duration((rand.Float64()-0.5)*0.4*float64(d))
}

// deliverWith opens the sealed secret of a subscription of accountID and
// delivers msg to target with client.
func deliverWith(ctx context.Context, box *mailer.SecretBox, client *http.Client, accountID int64, target string, sealed []byte,
	msg webhook.Message) webhook.Result {
	secret, err := box.Open(accountID, webhookSecretUse, sealed)
	if err != nil {
		return webhook.Result{Error: "the secret cannot be decrypted with this server's CRM_SECRET_KEY"}
	}
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		return webhook.Result{Error: "the stored secret is not valid"}
	}
	return webhook.Deliver(ctx, client, target, key, msg)
}

// nowRFC3339 is the time now as the payloads write it.
func nowRFC3339() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") }
