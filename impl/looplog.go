package impl

import (
	"context"
	"log/slog"
	"time"
)

// The background loops (the mail worker's two, the webhook worker, the purge
// of idempotency keys) run a round, then wait. While their rounds fail (the
// database is down, restarting or refusing connections) they neither log a
// line per round nor keep trying at full speed: roundHealth logs the change of
// state, reminds of a lasting failure now and then, and backs off.

// maxRoundBackoff is the longest wait between failing rounds.
const maxRoundBackoff = 30 * time.Second

// failureReminder is how often a lasting failure is logged again.
const failureReminder = 5 * time.Minute

// roundHealth follows the failures in a row of one background loop.
type roundHealth struct {
	log      *slog.Logger
	what     string // the loop, as its log lines name it ("webhook worker")
	failures int    // rounds failed in a row
	since    time.Time
	reminded time.Time
}

// failed records a failed round and returns how long the loop waits before
// the next: interval doubled for each failure in a row, at most
// maxRoundBackoff (and never less than interval). The first failure is
// logged at ERROR, later ones every failureReminder at WARN.
func (h *roundHealth) failed(err error, interval time.Duration) time.Duration {
	now := time.Now()
	h.failures++
	switch {
	case h.failures == 1:
		h.since, h.reminded = now, now
		h.log.Error(h.what+": a round failed; retrying with backoff, logging again when it recovers", "err", err)
	case now.Sub(h.reminded) >= failureReminder:
		h.reminded = now
		h.log.Warn(h.what+": still failing", "failures", h.failures, "since", h.since.UTC().Format(time.RFC3339), "err", err)
	}
	wait := interval
	for i := 1; i < h.failures && wait < maxRoundBackoff; i++ {
		wait *= 2
	}
	return max(interval, min(wait, maxRoundBackoff))
}

// ok records a round that worked, logging the recovery after failures.
func (h *roundHealth) ok() {
	if h.failures > 0 {
		h.log.Info(h.what+": recovered", "failures", h.failures, "after", time.Since(h.since).Round(time.Millisecond).String())
		h.failures = 0
	}
}

// runRounds runs round until ctx ends: again at once while it finds work,
// after idle when it found none, and with backoff while it fails (roundHealth).
func runRounds(ctx context.Context, log *slog.Logger, what string, idle time.Duration, round func(context.Context) (int, error)) {
	h := &roundHealth{log: log, what: what}
	for ctx.Err() == nil {
		n, err := round(ctx)
		wait := idle
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = h.failed(err, idle)
		default:
			h.ok()
			if n > 0 {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}
