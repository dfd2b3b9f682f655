package main

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// rssSampler samples the resident memory of this process (VmRSS of
// /proc/self/status), which holds the server under test and the benchmark's
// own clients, so it is an upper bound of the server's.
type rssSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	max  int64
}

func sampleRSS(every time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.max = max(s.max, residentBytes())
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the largest sample.
func (s *rssSampler) stop() int64 {
	close(s.done)
	s.wg.Wait()
	return max(s.max, residentBytes())
}

// residentBytes is VmRSS of this process, 0 where /proc is missing.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
