package demo

import (
	"sync"
	"time"
)

// Progress is a report of a load under way.
type Progress struct {
	// Step is what the load does: "waiting for the lock" (held by another
	// load of the demo data set, if any), "finding the demo account", a group
	// of tables such as "companies", "issuing tokens", or "done".
	Step string
	// Rows is the number of rows written so far.
	Rows int
	// Total is Rows and an estimate of the rows still to be written; it equals
	// Rows in the last report.
	Total int
	// Elapsed is the time since Load was called.
	Elapsed time.Duration
	// Left is an estimate of the time still needed at the rate of writing so
	// far; 0 in the last report and before the first row.
	Left time.Duration
	// Done is set in the last report, once the load has committed.
	Done bool
}

// Option configures Load.
type Option func(*options)

type options struct {
	every  time.Duration
	report func(Progress)
	label  string // of the tokens issued; "" for demoTokenLabel
	revoke bool   // revoke the earlier valid tokens of the label
}

// ReplacingTokens makes Load label the tokens it issues with label and revoke
// the valid tokens of the same label that earlier loads issued to the demo
// admin and member, so that loading again (every make run, every crm-server
// demo) leaves two valid tokens of the label, not two more each time. The
// tokens of other labels, the ones people issued with token create included,
// are left alone. Loads without it only add tokens (tests that share one
// database load the demo concurrently and each keeps its own).
func ReplacingTokens(label string) Option {
	return func(o *options) {
		o.label, o.revoke = label, true
	}
}

// WithProgress makes Load call report when it starts, every interval (2s when
// not positive) while it runs, also while it waits for another load of the
// demo data set, and once more when it has committed. The calls come one at a
// time, partly from a goroutine of Load's, and none after Load returns.
func WithProgress(every time.Duration, report func(Progress)) Option {
	return func(o *options) {
		o.every, o.report = every, report
	}
}

// tracker keeps the state that Progress reports and reports it on a ticker.
// The estimate of rows to come is the current step's planned rows not yet
// written plus the planned rows of the steps after it.
type tracker struct {
	every  time.Duration
	report func(Progress)
	start  time.Time
	quit   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	step     string
	began    time.Time // of the step that wrote the first row: the rate leaves out the wait for the lock
	rows     int
	stepRows int // written in the current step
	stepPlan int // planned for the current step
	later    int // planned for the steps after it
}

func newTracker(o options) *tracker {
	return &tracker{every: o.every, report: o.report, start: time.Now(), quit: make(chan struct{})}
}

// run reports at once and then every interval until stop.
func (t *tracker) run() {
	if t.report == nil {
		return
	}
	every := t.every
	if every <= 0 {
		every = 2 * time.Second
	}
	// The first report is sent before run returns, so that it describes the
	// start even when the goroutine is slow to be scheduled.
	t.report(t.snapshot())
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-t.quit:
				return
			case <-tick.C:
			}
			t.report(t.snapshot())
		}
	}()
}

// at starts a step that plans to write rows, with later rows planned after it.
func (t *tracker) at(step string, rows, later int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.step, t.stepRows, t.stepPlan, t.later = step, 0, rows, later
	if t.rows == 0 {
		t.began = time.Now()
	}
}

// add counts n rows written.
func (t *tracker) add(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows += n
	t.stepRows += n
}

func (t *tracker) snapshot() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := Progress{Step: t.step, Rows: t.rows, Total: t.rows + max(t.stepPlan-t.stepRows, 0) + t.later, Elapsed: time.Since(t.start)}
	if t.rows > 0 {
		p.Left = time.Duration(float64(time.Since(t.began)) * float64(p.Total-p.Rows) / float64(p.Rows))
	}
	return p
}

// stop ends the reports; after a load that committed it sends the last one.
func (t *tracker) stop(committed bool) {
	close(t.quit)
	t.wg.Wait()
	if t.report == nil || !committed {
		return
	}
	p := t.snapshot()
	p.Step, p.Total, p.Left, p.Done = "done", p.Rows, 0, true
	t.report(p)
}
