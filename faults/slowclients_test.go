package faults

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowClients opens a few hundred connections that send their headers a
// byte at a time; meanwhile normal requests are answered normally.
func TestSlowClients(t *testing.T) {
	need(t)
	s := startServer(t)
	waitHealthy(t, s.addr, 10*time.Second)
	const slow = 300
	header := []byte("GET /company/get?id=" + suite.company + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + suite.token + "\r\nX-Slow: ")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var open, sent atomic.Int64
	for range slow {
		wg.Go(func() {
			conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
			if err != nil {
				return
			}
			defer conn.Close()
			open.Add(1)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				b := byte('a')
				if i < len(header) {
					b = header[i]
				}
				if _, err := conn.Write([]byte{b}); err != nil {
					return // the server closed it: also fine
				}
				sent.Add(1)
			}
		})
	}
	time.Sleep(time.Second)
	var worst time.Duration
	for i := range 40 {
		r := read(s.addr)
		if !r.ok() || r.elapsed > 2*time.Second {
			t.Errorf("request %d among %d slow clients: %s", i, open.Load(), r)
		}
		worst = max(worst, r.elapsed)
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if open.Load() < slow/2 {
		t.Errorf("only %d of %d slow connections opened", open.Load(), slow)
	}
	t.Logf("%d slow clients sent %d bytes one at a time; 40 normal requests answered, the slowest in %v",
		open.Load(), sent.Load(), worst.Round(time.Millisecond))
}
