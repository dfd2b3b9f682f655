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
	p := &progress{log: log, phase: phase, unit: unit, scale: scale, total: total, start: time.Now(), quit: make(chan struct{})}
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
