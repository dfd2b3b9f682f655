package main

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// pgProxy sits between a server under test and one PostgreSQL node: it counts
// the round trips the server makes (each simple query, and each Sync that
// ends an extended-protocol exchange, is one wait for the database's answer)
// and can delay every chunk it passes on by a fixed time in each direction,
// as a network between the two would (issue 23 item 4: 0.25 ms each way).
type pgProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds added before each chunk, each way
	trips  atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target.
func startProxy(target string) (*pgProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &pgProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is where the server under test connects instead of target.
func (p *pgProxy) addr() string { return p.ln.Addr().String() }

// setDelay sets the time added in each direction.
func (p *pgProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// roundTrips is how many the servers made through p so far.
func (p *pgProxy) roundTrips() int64 { return p.trips.Load() }

func (p *pgProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

func (p *pgProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *pgProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	p.track(client, true)
	p.track(server, true)
	defer p.track(client, false)
	defer p.track(server, false)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, true); done <- struct{}{} }()
	go func() { p.pipe(client, server, false); done <- struct{}{} }()
	<-done
}

// pipe copies from src to dst; fromClient counts the round trips in the
// client's messages. With a delay each chunk is passed on that long after it
// arrived (a second goroutine writes it then): the delay of a network, not a
// limit of its bandwidth, so a reply in many chunks is late once, not once
// per chunk.
func (p *pgProxy) pipe(dst, src net.Conn, fromClient bool) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	queue := make(chan chunk, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer dst.Close()
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.data); err != nil {
				for range queue { // drain, so the reader never blocks
				}
				return
			}
		}
	}()
	var m msgCounter
	m.startup = fromClient
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromClient {
				p.trips.Add(m.feed(buf[:n]))
			}
			queue <- chunk{due: time.Now().Add(time.Duration(p.delay.Load())), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
}

// close stops listening and cuts every connection.
func (p *pgProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// msgCounter follows the frontend messages of one connection across reads:
// the startup message has no type byte; every later message is a type byte
// and a length that counts itself.
type msgCounter struct {
	startup bool   // the next message is the startup (or SSL) request
	head    []byte // a header split across reads
	skip    int    // bytes of the current message's body still to pass
}

// feed returns the round trips in b: 'Q' (a simple query) and 'S' (Sync).
func (m *msgCounter) feed(b []byte) int64 {
	var trips int64
	for len(b) > 0 {
		if m.skip > 0 {
			k := min(m.skip, len(b))
			m.skip -= k
			b = b[k:]
			continue
		}
		need := 5
		if m.startup {
			need = 8 // the length and the protocol's code
		}
		take := min(need-len(m.head), len(b))
		m.head = append(m.head, b[:take]...)
		b = b[take:]
		if len(m.head) < need {
			return trips
		}
		if m.startup {
			n := int(binary.BigEndian.Uint32(m.head))
			code := binary.BigEndian.Uint32(m.head[4:])
			// An SSL or GSS request is followed by another startup message.
			m.startup = code == 80877103 || code == 80877104
			m.skip = n - 8
		} else {
			switch m.head[0] {
			case 'Q', 'S':
				trips++
			}
			m.skip = int(binary.BigEndian.Uint32(m.head[1:])) - 4
		}
		m.head = m.head[:0]
	}
	return trips
}
