package impl

import (
	"context"
	"time"
)

// inFlight bounds the operations the process serves at once
// (Config.MaxInFlight). Past the bound an operation waits for a slot in the
// order of arrival (the waiting senders of a Go channel are served first in,
// first out), for at most its deadline, and then gets the 503 envelope with
// Retry-After. A nil *inFlight bounds nothing.
//
// What it is for: when the database shares the machine's cores with the
// server (or a few cores serve many clients), every request let through at
// once adds a database process that the kernel preempts in mid-statement, and
// a preempted request waits a whole time slice for its core: the slowest
// requests then take ten or twenty times the median. Waiting in line in the
// server costs each request about the same on average and keeps the slowest
// close to the median (docs/benchmarks.md).
type inFlight struct {
	slots chan struct{}
}

func newInFlight(n int) *inFlight {
	if n <= 0 {
		return nil
	}
	return &inFlight{slots: make(chan struct{}, n)}
}

// errBusy answers an operation that waited its whole deadline for a slot.
var errBusy = &Error{Code: CodeNotReady, RetryAfter: 1,
	Msg: "service unavailable: too many requests in progress, retry later"}

// acquire waits for a slot for at most wait (no bound when not positive) or
// until ctx ends, and returns what gives it back.
func (l *inFlight) acquire(ctx context.Context, wait time.Duration) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	select { // the common case, without a timer
	case l.slots <- struct{}{}:
		return l.release, nil
	default:
	}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	select {
	case l.slots <- struct{}{}:
		return l.release, nil
	case <-ctx.Done(): // the wait's bound, or the client went away
		return nil, errBusy
	}
}

func (l *inFlight) release() { <-l.slots }
