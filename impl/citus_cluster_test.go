package impl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// TestCitusClusterChanges holds routing to the account's node (db.Router)
// to what docs/scale-out.md promises while the cluster changes under load:
// a server with routing on takes counterparty and task inserts and reads of
// one account from a few clients while (1) the account's shards move to the
// other worker (citus_move_shard_placement, logical replication), (2) a new
// worker joins and the rebalancer spreads the shards onto it
// (citus_add_node, rebalance_table_shards), the account's moved there if the
// rebalancer left it, and (3) the new worker is drained and removed again.
// No request fails, every acknowledged write is stored, and the router
// sends the account to its new node within seconds of each change.
//
// It changes the placements of the whole database, so it runs only in a
// phase of make test-citus of its own, where CRM_CITUS_SPARE names the spare
// node (crm-server db citus spare).
func TestCitusClusterChanges(t *testing.T) {
	spare := os.Getenv("CRM_CITUS_SPARE")
	if spare == "" {
		t.Skip("moves shards and adds a worker: make test-citus runs it in a phase of its own, with CRM_CITUS_SPARE the address of a spare node (crm-server db citus spare)")
	}
	ctx := context.Background()
	url := dbtest.NewURL(t)
	admin, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if citus, err := db.IsCitus(ctx, admin); err != nil {
		t.Fatal(err)
	} else if !citus {
		t.Skip("the database has no citus extension: make test-citus runs this test")
	}
	serverURL, err := db.SingleShardURL(url)
	if err != nil {
		t.Fatal(err)
	}
	routerPool, err := db.Open(ctx, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	defer routerPool.Close()
	router, err := db.NewRouter(ctx, serverURL, &db.Node{DB: routerPool, Generic: routerPool}, db.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	e := newEnv(t, func(c *impl.Config) { c.Router = router })
	w := e.newWorld(t, "moving")
	base := insertCompany(t, e, w.admin.token, map[string]any{"name": "Moving base", "type_id": w.dirs[9][1], "user_id": w.admin.id})

	// The account's shard and where it is.
	var shard int64
	if err := admin.GetContext(ctx, &shard, `SELECT get_shard_id_for_distribution_column('accounts', $1::bigint)`, w.accountID); err != nil {
		t.Fatal(err)
	}
	placement := func() string {
		t.Helper()
		var addr string
		if err := admin.GetContext(ctx, &addr, `
			SELECT n.nodename || ':' || n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid
			 WHERE p.shardid = $1`, shard); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	var workers []string
	if err := admin.SelectContext(ctx, &workers, `SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeport`); err != nil {
		t.Fatal(err)
	}
	if len(workers) < 2 {
		t.Skipf("the test needs two workers, the cluster has %d", len(workers))
	}
	// Routing follows a placement within a few refreshes.
	follows := func(t *testing.T, since time.Time, addr string) {
		t.Helper()
		for router.For(ctx, w.accountID).Addr != addr {
			if time.Since(since) > 10*time.Second {
				t.Fatalf("10 s after the change the router still sends account %d to %q, not %s", w.accountID, router.For(ctx, w.accountID).Addr, addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the router sends the account to %s %s after the change", addr, time.Since(since).Round(10*time.Millisecond))
	}
	follows(t, time.Now(), placement())

	l := startLoad(e, w, base)
	// change runs a change of the cluster under the load and waits for the
	// router to follow the account.
	change := func(t *testing.T, what string, run func() string) {
		t.Helper()
		before := l.acknowledged()
		start := time.Now()
		l.during(what)
		to := run()
		took := time.Since(start)
		during := l.acknowledged() - before
		t.Logf("%s took %s; %d writes acknowledged meanwhile", what, took.Round(10*time.Millisecond), during)
		l.during("after " + what)
		follows(t, time.Now(), to)
		// Some requests on the new node before the next change.
		for n, until := l.acknowledged(), time.Now().Add(10*time.Second); l.acknowledged() < n+20 && time.Now().Before(until); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	from := placement()
	other := workers[0]
	if other == from {
		other = workers[1]
	}
	host, port := splitAddr(t, other)
	fromHost, fromPort := splitAddr(t, from)
	change(t, "the move of the account's shards from "+from+" to "+other, func() string {
		if _, err := admin.ExecContext(ctx, `SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode => 'auto')`,
			shard, fromHost, fromPort, host, port); err != nil {
			t.Fatalf("move: %v", err)
		}
		return placement()
	})
	spareHost, sparePort := splitAddr(t, spare)
	removed := false
	defer func() {
		if !removed { // leave the cluster as it was, whatever failed
			admin.ExecContext(ctx, `SELECT citus_drain_node($1, $2)`, spareHost, sparePort)
			admin.ExecContext(ctx, `SELECT citus_remove_node($1, $2)`, spareHost, sparePort)
		}
	}()
	change(t, "adding the worker "+spare+" and rebalancing", func() string {
		if _, err := admin.ExecContext(ctx, `SELECT citus_add_node($1, $2)`, spareHost, sparePort); err != nil {
			t.Fatalf("add the node: %v", err)
		}
		// Two moves are enough to show it; a full rebalance of 32 shard
		// groups onto a third node takes minutes here.
		if _, err := admin.ExecContext(ctx, `SELECT rebalance_table_shards(max_shard_moves => 2, shard_transfer_mode => 'auto')`); err != nil {
			t.Fatalf("rebalance: %v", err)
		}
		var moved int
		if err := admin.GetContext(ctx, &moved, `SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid
			WHERE n.nodename = $1 AND n.nodeport = $2`, spareHost, sparePort); err != nil || moved == 0 {
			t.Fatalf("the rebalancer moved %d shards to the new worker (%v)", moved, err)
		}
		if at := placement(); at != spare {
			// The rebalancer left the account where it was: it moves there now.
			h, p := splitAddr(t, at)
			if _, err := admin.ExecContext(ctx, `SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode => 'auto')`,
				shard, h, p, spareHost, sparePort); err != nil {
				t.Fatalf("move to the new worker: %v", err)
			}
		}
		return placement()
	})
	change(t, "draining and removing the worker "+spare, func() string {
		if _, err := admin.ExecContext(ctx, `SELECT citus_drain_node($1, $2)`, spareHost, sparePort); err != nil {
			t.Fatalf("drain: %v", err)
		}
		if _, err := admin.ExecContext(ctx, `SELECT citus_remove_node($1, $2)`, spareHost, sparePort); err != nil {
			t.Fatalf("remove the node: %v", err)
		}
		removed = true
		return placement()
	})
	companies, tasks, failures, reads := l.stop()

	for _, f := range failures {
		t.Errorf("a request failed: %s", f)
	}
	if reads == 0 || len(companies) == 0 || len(tasks) == 0 {
		t.Fatalf("the load did nothing: %d reads, %d counterparties, %d tasks", reads, len(companies), len(tasks))
	}
	stored := func(table string, ids []int64) {
		t.Helper()
		var n int
		if err := admin.GetContext(ctx, &n, `SELECT count(*) FROM `+table+` WHERE account_id = $1 AND id = ANY($2)`, w.accountID, pq.Array(ids)); err != nil {
			t.Fatal(err)
		}
		if n != len(ids) {
			t.Errorf("%d of %d acknowledged %s are stored", n, len(ids), table)
		}
	}
	stored("companies", companies)
	stored("tasks", tasks)
	t.Logf("%d counterparties and %d tasks acknowledged and stored, %d cards read", len(companies), len(tasks), reads)
}

func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, port
}

// load is a few clients writing and reading one account until stopped.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	companies []int64
	tasks     []int64
	failures  []string
	reads     int
	phase     string    // the change going on
	since     time.Time // when it began
}

// fail records a failed request with the change it happened in.
func (l *load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf("%v (%s, %s after it began)", err, l.phase, time.Since(l.since).Round(time.Millisecond)))
}

// during names the change that goes on from now.
func (l *load) during(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase, l.since = phase, time.Now()
}

func startLoad(e *env, w *world, base int64) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, phase: "before the changes", since: time.Now()}
	call := func(method, target string, body any) (string, error) {
		var r *http.Request
		if body != nil {
			b, _ := json.Marshal(body)
			r = httptest.NewRequest(method, target, bytes.NewReader(b))
			r.Header.Set("Content-Type", "application/json")
		} else {
			r = httptest.NewRequest(method, target, nil)
		}
		r.Header.Set("Authorization", "Bearer "+w.admin.token)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, r)
		var env struct {
			Status string  `json:"status"`
			Error  *string `json:"error"`
			Value  string  `json:"value"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusOK || env.Status != "success" {
			return "", fmt.Errorf("%s %s: HTTP %d %s", method, target, rec.Code, rec.Body.Bytes())
		}
		return env.Value, nil
	}
	record := func(ids *[]int64, value string, err error) {
		id, perr := strconv.ParseInt(value, 10, 64)
		switch {
		case err != nil:
			l.fail(err)
		case perr != nil:
			l.fail(fmt.Errorf("value %q is not an id", value))
		default:
			l.mu.Lock()
			*ids = append(*ids, id)
			l.mu.Unlock()
		}
	}
	for g := range 2 {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				v, err := call(http.MethodPost, "/company/insert", map[string]any{"name": fmt.Sprintf("Moving %d-%d", g, i), "type_id": w.dirs[9][1], "user_id": w.admin.id})
				record(&l.companies, v, err)
			}
		})
	}
	l.wg.Go(func() {
		for ctx.Err() == nil {
			v, err := call(http.MethodPost, "/task/insert", map[string]any{"company_id": base, "note": "moving", "type_id": w.dirs[35][0]})
			record(&l.tasks, v, err)
		}
	})
	l.wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := call(http.MethodGet, fmt.Sprintf("/company/get?id=%d", base), nil); err != nil {
				l.fail(err)
			} else {
				l.mu.Lock()
				l.reads++
				l.mu.Unlock()
			}
		}
	})
	return l
}

// acknowledged counts the writes acknowledged so far.
func (l *load) acknowledged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.companies) + len(l.tasks)
}

func (l *load) stop() (companies, tasks []int64, failures []string, reads int) {
	l.cancel()
	l.wg.Wait()
	return l.companies, l.tasks, l.failures, l.reads
}
