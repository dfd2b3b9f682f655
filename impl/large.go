package impl

import (
	"fmt"
	"net/http"
	"sync"
)

// largeBody is the size from which a request counts as large: its body, read
// whole, validated and decoded, costs a multiple of it in memory.
const largeBody = 1 << 20

// largeRequests bounds the large requests the process handles at once
// (Config.LargeRequests): past the bound a large request is answered 429 with
// Retry-After before its body is read, so that memory does not grow with the
// number of clients sending large bodies. A nil *largeRequests bounds nothing.
type largeRequests struct {
	slots   chan struct{}
	metrics *Metrics // crm_large_requests_in_flight; nil counts nothing
}

func newLargeRequests(n int, metrics *Metrics) *largeRequests {
	if n <= 0 {
		return nil
	}
	return &largeRequests{slots: make(chan struct{}, n), metrics: metrics}
}

// isLarge reports whether r's body counts as large: declared over largeBody,
// or of unknown length (chunked) on an operation that accepts more.
func isLarge(r *http.Request, op *operation) bool {
	if r.ContentLength > largeBody {
		return true
	}
	return r.ContentLength < 0 && op.bodyLimit > largeBody && r.Body != nil && r.Body != http.NoBody
}

// acquire takes a slot for a large request, or answers why not; release gives
// the slot back (once the operation has really ended, late or not). Calling
// release more than once gives it back once.
func (l *largeRequests) acquire() (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
		l.metrics.largeRequestStarted()
		var once sync.Once
		return func() {
			once.Do(func() {
				<-l.slots
				l.metrics.largeRequestEnded()
			})
		}, nil
	default:
		return nil, &Error{Code: CodeTooMany, RetryAfter: 1,
			Msg: fmt.Sprintf("too many large requests in flight: at most %d bodies over 1 MiB at once, retry later", cap(l.slots))}
	}
}
