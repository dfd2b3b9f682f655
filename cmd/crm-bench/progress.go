package main

import (
	"log/slog"
	"sync"
	"time"
)

// progress logs, every few seconds while a long phase runs, how far it is:
// what it does, the amount done of the total, the rate so far and the time
// left at that rate.
type progress struct {
	log   *slog.Logger
	phase string
	unit  string // of the amounts as logged
	scale int64  // amounts counted per unit logged
	total int64
	start time.Time
	quit  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	doing string
	done  int64
}

// startProgress starts logging the progress of phase every interval; its
// total amount is counted in units of scale (1 for rows, 1<<20 for bytes
// logged in MB).
func startProgress(log *slog.Logger, every time.Duration, phase, unit string, scale, total int64) *progress {
	// Until the phase names what it does, a report (the machine may be slow to
	// get there) says it is starting.
	p := &progress{log: log, phase: phase, unit: unit, scale: scale, total: total, start: time.Now(), quit: make(chan struct{}), doing: "starting"}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
				p.report()
			}
		}
	}()
	return p
}

// at names what the phase does now.
func (p *progress) at(doing string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doing = doing
}

// add counts an amount done.
func (p *progress) add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
}

func (p *progress) report() {
	p.mu.Lock()
	doing, done := p.doing, p.done
	p.mu.Unlock()
	elapsed := time.Since(p.start)
	rate := float64(done) / elapsed.Seconds()
	var left time.Duration
	if done > 0 {
		left = time.Duration(float64(elapsed) * float64(p.total-done) / float64(done))
	}
	p.log.Info(p.phase, "at", doing, "done", done/p.scale, "of", p.total/p.scale, "unit", p.unit,
		"percent", percent(done, p.total), "per_second", int64(rate)/p.scale, "left", left.Round(time.Second))
}

// stop ends the reports and, when the phase completed, logs its totals.
func (p *progress) stop(completed bool) {
	close(p.quit)
	p.wg.Wait()
	if !completed {
		return
	}
	elapsed := time.Since(p.start)
	p.log.Info(p.phase+": done", "total", p.done/p.scale, "unit", p.unit,
		"per_second", int64(float64(p.done)/elapsed.Seconds())/p.scale, "took", elapsed.Round(time.Millisecond))
}

func percent(done, total int64) float64 {
	if total == 0 {
		return 100
	}
	return float64(done*1000/total) / 10
}

// eta logs, every few seconds while the scenarios are measured, which one
// runs and the time left: the rest of the current scenario and the ones
// after it, each taking what the finished ones took on average (before the
// first finishes, what one is planned to take: four phases of warm-up and
// measurement).
type eta struct {
	log     *slog.Logger
	n       int
	planned time.Duration
	start   time.Time
	quit    chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	current int
	name    string
	began   time.Time
}

func startETA(log *slog.Logger, every time.Duration, n int, planned time.Duration) *eta {
	e := &eta{log: log, n: n, planned: planned, start: time.Now(), quit: make(chan struct{})}
	e.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-e.quit:
				return
			case <-tick.C:
				e.report("measuring")
			}
		}
	})
	return e
}

// begin marks the start of scenario i and logs it.
func (e *eta) begin(i int, name string) {
	e.mu.Lock()
	e.current, e.name, e.began = i, name, time.Now()
	e.mu.Unlock()
	e.report("scenario")
}

func (e *eta) report(msg string) {
	e.mu.Lock()
	i, name, began := e.current, e.name, e.began
	e.mu.Unlock()
	each := e.planned
	if i > 0 {
		each = began.Sub(e.start) / time.Duration(i)
	}
	left := max(each-time.Since(began), 0) + each*time.Duration(e.n-i-1)
	e.log.Info(msg, "name", name, "n", i+1, "of", e.n, "left", left.Round(time.Second))
}

func (e *eta) stop() {
	close(e.quit)
	e.wg.Wait()
}
