package faults

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
)

// TestKillDuringInserts kills the server with SIGKILL during a stream of
// inserts made with an Idempotency-Key: every insert acknowledged with an id
// exists afterwards, and the retry of every other key on a new server makes
// at most one record per key.
func TestKillDuringInserts(t *testing.T) {
	need(t)
	s := startServer(t)
	const workers = 8
	run := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	var (
		mu    sync.Mutex
		acked = map[string]string{} // key: id
		keys  []string
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%s-%d-%d", run, w, i)
				mu.Lock()
				keys = append(keys, key)
				mu.Unlock()
				r := call(s.addr, http.MethodPost, "/company/insert", insertBody(key), "Idempotency-Key", key)
				if r.ok() {
					mu.Lock()
					acked[key] = r.env.Value
					mu.Unlock()
				} else if r.err == nil {
					t.Errorf("insert %s before the kill: %s", key, r)
				}
			}
		})
	}
	// Kill once a few dozen inserts were acknowledged (the machine may be slow).
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 {
			break
		}
	}
	s.kill()
	close(stop)
	wg.Wait()
	if len(acked) < 10 {
		t.Fatalf("only %d inserts acknowledged before the kill: too few to prove anything", len(acked))
	}

	var ids []string
	for _, id := range acked {
		ids = append(ids, id)
	}
	var found int
	if err := suite.pool.Get(&found, `SELECT count(*) FROM companies WHERE account_id = $1 AND id::text = ANY($2)`,
		suite.account, pq.Array(ids)); err != nil {
		t.Fatal(err)
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged inserts exist after the kill", found, len(acked))
	}

	// A client retries what it saw no reply to: one record per key, the
	// acknowledged keys replay their id.
	again := startServer(t)
	for _, key := range keys {
		r := call(again.addr, http.MethodPost, "/company/insert", insertBody(key), "Idempotency-Key", key)
		if !r.ok() {
			t.Fatalf("retry of %s after the restart: %s", key, r)
		}
		if id, ok := acked[key]; ok && r.env.Value != id {
			t.Errorf("retry of acknowledged %s: id %s, want %s", key, r.env.Value, id)
		}
	}
	var names, distinct int
	if err := suite.pool.QueryRow(`SELECT count(*), count(DISTINCT name) FROM companies WHERE account_id = $1 AND name LIKE $2`,
		suite.account, run+"-%").Scan(&names, &distinct); err != nil {
		t.Fatal(err)
	}
	if names != len(keys) || distinct != len(keys) {
		t.Errorf("%d records (%d names) for %d keys, want one each", names, distinct, len(keys))
	}
	t.Logf("%d inserts acknowledged before the kill, all stored; %d keys retried, one record each", len(acked), len(keys))
}
