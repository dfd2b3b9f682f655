package db_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	neturl "net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestReadRemoteCommands reads the remote commands of one application's
// sessions from a node's log: the other sessions' lines, a command of several
// lines, and a command whose detail is not there yet.
func TestReadRemoteCommands(t *testing.T) {
	log := strings.Join([]string{
		`2026-12-02 00:37:34.471 UTC [100] {crm-t} NOTICE:  issuing SELECT count(*) AS count FROM public.companies_102008 companies WHERE (account_id OPERATOR(pg_catalog.=) 5)`,
		`2026-12-02 00:37:34.471 UTC [100] {crm-t} DETAIL:  on server postgres@127.0.0.1:9701 connectionId: 1`,
		`2026-12-02 00:37:34.472 UTC [101] {other} NOTICE:  issuing SELECT 1`,
		`2026-12-02 00:37:34.472 UTC [101] {other} DETAIL:  on server postgres@127.0.0.1:9702 connectionId: 3`,
		`2026-12-02 00:37:34.473 UTC [100] {crm-t} NOTICE:  issuing SELECT id`,
		`  FROM public.tasks_102011 tasks`,
		`2026-12-02 00:37:34.473 UTC [100] {crm-t} DETAIL:  on server postgres@127.0.0.1:9702 connectionId: 2`,
		`2026-12-02 00:37:34.474 UTC [102] {} LOG:  checkpoint starting: time`,
		`2026-12-02 00:37:34.474 UTC [103] {crm-t} NOTICE:  executing the command locally: SELECT 1 FROM public.companies_102008 companies`,
		`2026-12-02 00:37:34.475 UTC [100] {crm-t} NOTICE:  issuing PREPARE TRANSACTION 'citus_0_100_11_3'`,
	}, "\n") + "\n"
	got, local, err := db.ReadRemoteCommands(strings.NewReader(log), "127.0.0.1:9700", "crm-t")
	if err != nil {
		t.Fatal(err)
	}
	if local != 1 {
		t.Errorf("ReadRemoteCommands counted %d local commands, want 1", local)
	}
	want := []db.RemoteCommand{
		{From: "127.0.0.1:9700", To: "127.0.0.1:9701", PID: 100, Command: "SELECT count(*) AS count FROM public.companies_102008 companies WHERE (account_id OPERATOR(pg_catalog.=) 5)"},
		{From: "127.0.0.1:9700", To: "127.0.0.1:9702", PID: 100, Command: "SELECT id\n  FROM public.tasks_102011 tasks"},
		{From: "127.0.0.1:9700", PID: 100, Command: "PREPARE TRANSACTION 'citus_0_100_11_3'"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadRemoteCommands =\n%#v\nwant\n%#v", got, want)
	}
}

// TestJudgeRemoteCommands holds the rules of the audit of make test-citus:
// the coordinator may send a request's commands to the account's node and
// the background workers' reads anywhere; a two-phase commit, a command to
// another node, and any command a worker sends are not allowed.
func TestJudgeRemoteCommands(t *testing.T) {
	const coord, w1, w2 = "127.0.0.1:9700", "127.0.0.1:9701", "127.0.0.1:9702"
	const begin28 = "BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED READ ONLY;SELECT assign_distributed_transaction_id(0, 28, '2026-12-02 00:42:17.523476+00');"
	const begin30 = "BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED;SELECT assign_distributed_transaction_id(0, 30, '2026-12-02 00:42:18.1+00');"
	cmds := []db.RemoteCommand{
		{From: coord, PID: 1, To: w2, Command: begin28},
		{From: coord, PID: 1, To: w2, Command: "SELECT account_id, created_at FROM public.idempotency_keys_102040 idempotency_keys WHERE created_at < now() LIMIT 1000"},
		{From: coord, PID: 2, To: w1, Command: "SELECT crm_company_get(5, 7, 9)"},
		{From: coord, PID: 1, To: w2, Command: "COMMIT"},
		{From: coord, PID: 3, To: w2, Command: begin30},
		{From: coord, PID: 3, To: w2, Command: "DELETE FROM public.idempotency_keys_102041 idempotency_keys WHERE account_id < 0"},
		{From: coord, PID: 3, To: w2, Command: "COMMIT"},
		{From: coord, PID: 4, To: w2, Command: "SELECT id FROM public.companies_102009 companies WHERE account_id = 6"},
		{From: coord, PID: 5, To: w1, Command: "PREPARE TRANSACTION 'citus_0_100_11_3'"},
		{From: coord, PID: 5, To: w1, Command: "COMMIT PREPARED 'citus_0_100_11_3'"},
		{From: w2, PID: 6, To: w1, Command: "SELECT count(*) FROM public.companies_102008 companies WHERE account_id = 5"},
	}
	got := db.JudgeRemoteCommands(cmds, coord, map[string]bool{w1: true})
	want := db.CitusAudit{Commands: 11, Background: 1, TwoPhase: 2, Violations: []string{
		`a node that holds none of the run's accounts: 127.0.0.1:9700 sent "` + begin30 + `" to 127.0.0.1:9702`,
		`a node that holds none of the run's accounts: 127.0.0.1:9700 sent "DELETE FROM public.idempotency_keys_102041 idempotency_keys WHERE account_id < 0" to 127.0.0.1:9702`,
		`a node that holds none of the run's accounts: 127.0.0.1:9700 sent "COMMIT" to 127.0.0.1:9702`,
		`a node that holds none of the run's accounts: 127.0.0.1:9700 sent "SELECT id FROM public.companies_102009 companies WHERE account_id = 6" to 127.0.0.1:9702`,
		`two-phase commit: 127.0.0.1:9700 sent "PREPARE TRANSACTION 'citus_0_100_11_3'" to 127.0.0.1:9701`,
		`two-phase commit: 127.0.0.1:9700 sent "COMMIT PREPARED 'citus_0_100_11_3'" to 127.0.0.1:9701`,
		`a worker sent a command of a request on: 127.0.0.1:9702 sent "SELECT count(*) FROM public.companies_102008 companies WHERE account_id = 5" to 127.0.0.1:9701`,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JudgeRemoteCommands =\n%#v\nwant\n%#v", got, want)
	}
}

// TestCitusAuditFindsViolations proves on the private Citus cluster (make
// test-citus) that the audit of the conformance run fails on what it must:
// sessions of an application of its own commit a write on both workers
// (two-phase commit, commands to a node without the account) and read an
// account on the worker that does not hold it; a read of the account on its
// own worker, in another application's session, sends nothing.
func TestCitusAuditFindsViolations(t *testing.T) {
	url := dbtest.NewURL(t)
	ctx := context.Background()
	coord, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	if citus, err := db.IsCitus(ctx, coord); err != nil {
		t.Fatal(err)
	} else if !citus {
		t.Skip("the database has no citus extension: make test-citus runs this test")
	}
	logs, err := db.LocalCitusLogs(ctx, coord, url)
	if err != nil {
		t.Skipf("the audit reads the logs of the private Citus cluster (make test-citus): %v", err)
	}
	var workers []string
	for _, n := range logs {
		if !n.Coordinator {
			workers = append(workers, n.Addr)
		}
	}
	if len(workers) < 2 {
		t.Skipf("the test needs two workers, the cluster has %d", len(workers))
	}
	const account = 987654321 // no such account: its statements route all the same
	nodes, err := db.AccountNodes(ctx, coord, []int64{account})
	if err != nil {
		t.Fatal(err)
	}
	other := workers[0]
	if nodes[other] {
		other = workers[1]
	}
	var home string
	for a := range nodes {
		home = a
	}
	session := func(addr, app string) string {
		t.Helper()
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		if addr != "" {
			u.Host = addr
		}
		q := u.Query()
		q.Set("application_name", app)
		q.Set("citus.log_remote_commands", "on")
		q.Set("log_min_messages", "notice")
		u.RawQuery = q.Encode()
		return u.String()
	}
	exec := func(url string, stmts ...string) {
		t.Helper()
		pool, err := db.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		for _, s := range stmts {
			if _, err := pool.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	audit := func(app string) db.CitusAudit {
		t.Helper()
		a, err := db.AuditCitusRequests(ctx, coord, url, app, []int64{account})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	allowed, bad, good := "crm-audit-"+randomHex(t), "crm-audit-"+randomHex(t), "crm-audit-"+randomHex(t)
	// Allowed: the coordinator sends the account's read to its node; a
	// background read of the idempotency keys goes to every node.
	exec(session("", allowed), `SELECT count(*) FROM companies WHERE account_id = 987654321`,
		`SELECT count(*) FROM idempotency_keys WHERE created_at < now() - interval '100 years'`)
	// Not allowed: a write on both workers (two-phase commit) and a request
	// read on a worker that does not hold the account.
	exec(session("", bad), `DELETE FROM idempotency_keys WHERE account_id < 0`)
	exec(session(other, bad), `SELECT count(*) FROM companies WHERE account_id = 987654321`)
	// On the account's own worker, nothing leaves the node.
	exec(session(home, good), `SELECT count(*) FROM companies WHERE account_id = 987654321`,
		`SELECT count(*) FROM tasks WHERE account_id = 987654321`)

	if a := audit(allowed); a.Commands < 2 || a.Background == 0 || len(a.Violations) != 0 {
		t.Errorf("the allowed commands: %d commands, %d background, violations:\n%s", a.Commands, a.Background, strings.Join(a.Violations, "\n"))
	}
	a := audit(bad)
	kinds := map[string]int{}
	for _, v := range a.Violations {
		kind, _, _ := strings.Cut(v, ":")
		kinds[kind]++
	}
	if a.TwoPhase == 0 || kinds["two-phase commit"] != a.TwoPhase || kinds["a worker sent a command of a request on"] == 0 ||
		kinds["a node that holds none of the run's accounts"] == 0 {
		t.Errorf("the audit of the deliberate violations: %d commands, %d two-phase, violations by kind %v:\n%s",
			a.Commands, a.TwoPhase, kinds, strings.Join(a.Violations, "\n"))
	}
	if g := audit(good); g.Commands != 0 || len(g.Violations) != 0 || !reflect.DeepEqual(g.Local, map[string]int{home: 2}) {
		t.Errorf("a read on the account's own node sent %d remote commands (%v), ran %v locally", g.Commands, g.Violations, g.Local)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
