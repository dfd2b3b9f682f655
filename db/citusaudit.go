package db

import (
	"bufio"
	"context"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

// One node per request, checked (docs/scale-out.md, "Every request on its
// account's node"): the servers under test connect with an application_name of
// their own and with citus.log_remote_commands on, so every command a Citus
// node sends to another node on behalf of their sessions is written to the
// sending node's log, with the node it went to. After the run, CitusAudit
// reads the logs of every node and judges each such command:
//
//   - PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED: a two-phase
//     commit, never allowed;
//   - sent by a worker: a request on the worker that holds its account runs
//     there alone and sends nothing, so the request either went to a worker
//     that holds none of its account, or that worker sent something to one;
//     never allowed;
//   - sent by the coordinator to the node that holds an account of the run:
//     allowed (a request that went through the coordinator, CITUS_ROUTING=off
//     or a node the router could not reach);
//   - sent by the coordinator to any other node: allowed only for the reads of
//     the background workers that cross accounts (the tables of
//     citusBackgroundTables), never for a request.

// citusBackgroundTables are the tables whose statements from the coordinator
// may reach every node: the scans of the background workers and the metrics
// listed in docs/scale-out.md ("The statements that do cross accounts").
var citusBackgroundTables = map[string]bool{
	"idempotency_keys": true, // the purge of expired keys
	"mail_outbox":      true, // the outbox's due messages and the metrics' counts
	"mailboxes":        true, // the poller's due mailboxes
	"webhooks":         true, // the webhook worker's due subscriptions
	"event_counters":   true, // joined by the webhook worker
}

// RemoteCommand is one command a session sent to another Citus node, as the
// sending node logged it.
type RemoteCommand struct {
	From    string // the sending node, host:port
	To      string // the node it went to, host:port
	PID     int    // the sending backend
	Command string
}

// CitusAudit is the judgement of the remote commands of one application's
// sessions.
type CitusAudit struct {
	Commands   int      // remote commands of the application's sessions, on every node
	Background int      // of which allowed reads of the background workers
	TwoPhase   int      // of which PREPARE TRANSACTION, COMMIT PREPARED or ROLLBACK PREPARED
	Violations []string // every command not allowed, and why
	// Local counts, by node, the commands that the application's sessions
	// ran on shards of the node itself: proof that the sessions logged at all.
	Local map[string]int
}

// citusLogLine is a line of the private cluster's log (citusLogPrefix):
// time, [pid], {application_name}, level, message.
var citusLogLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[(\d+)\] \{(.*?)\} ([A-Z]+\d?):  (.*)$`)

// citusTarget is the detail of a logged remote command: where it went.
var citusTarget = regexp.MustCompile(`^on server \S*@(\S+):(\d+) connectionId: \d+`)

// ReadRemoteCommands reads the remote commands that sessions of application
// app sent, from the log of the node at from (a log written with
// citusLogPrefix, citus.log_remote_commands on and log_min_messages at
// notice or lower in those sessions).
func ReadRemoteCommands(r io.Reader, from, app string) (cmds []RemoteCommand, local int, err error) {
	type record struct {
		pid        int
		app, level string
		msg        strings.Builder
	}
	var out []RemoteCommand
	pending := map[int]*RemoteCommand{} // an "issuing" record waiting for its DETAIL, by backend
	var cur *record
	flush := func() {
		if cur == nil || cur.app != app {
			return
		}
		msg := cur.msg.String()
		switch cur.level {
		case "NOTICE", "LOG":
			if cmd, ok := strings.CutPrefix(msg, "issuing "); ok {
				pending[cur.pid] = &RemoteCommand{From: from, PID: cur.pid, Command: cmd}
			} else if strings.HasPrefix(msg, "executing the command locally: ") {
				local++
			}
		case "DETAIL":
			if p := pending[cur.pid]; p != nil {
				if m := citusTarget.FindStringSubmatch(msg); m != nil {
					p.To = m[1] + ":" + m[2]
					out = append(out, *p)
				}
				delete(pending, cur.pid)
			}
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		m := citusLogLine.FindStringSubmatch(line)
		if m == nil {
			// A command of several lines goes on without the prefix.
			if cur != nil {
				cur.msg.WriteString("\n")
				cur.msg.WriteString(line)
			}
			continue
		}
		flush()
		pid, _ := strconv.Atoi(m[1])
		cur = &record{pid: pid, app: m[2], level: m[3]}
		cur.msg.WriteString(m[4])
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the log of %s: %w", from, err)
	}
	// A command whose DETAIL is missing still counts, bound for nowhere known.
	for _, p := range pending {
		out = append(out, *p)
	}
	return out, local, nil
}

// shardName finds the shards a command names: a distributed table's name
// followed by the shard id (companies_102008).
var shardName = regexp.MustCompile(`\b([a-z_][a-z0-9_]*?)_(\d{6,})\b`)

// JudgeRemoteCommands judges cmds (see above): coordinator is the
// coordinator's address, accountNodes the addresses of the nodes that hold an
// account of the run. A command that only frames a transaction on a node
// (BEGIN with Citus's transaction id, COMMIT, ROLLBACK) is judged by what the
// same transaction sent that node: allowed where all of it is allowed
// background reads.
func JudgeRemoteCommands(cmds []RemoteCommand, coordinator string, accountNodes map[string]bool) CitusAudit {
	type session struct {
		from string
		pid  int
	}
	type leg struct { // what one transaction of a session sent one node
		session
		txn, to string
	}
	current := map[session]string{} // the Citus transaction each session is in
	legs := make([]leg, len(cmds))
	onlyBackground := map[leg]bool{} // legs with data commands, whether all are background reads
	for i, c := range cmds {
		s := session{c.From, c.PID}
		if m := citusTransaction.FindStringSubmatch(c.Command); m != nil {
			current[s] = m[1]
		}
		legs[i] = leg{s, current[s], c.To}
		if !framing(c.Command) {
			all, seen := onlyBackground[legs[i]]
			onlyBackground[legs[i]] = (all || !seen) && backgroundRead(c.Command)
		}
	}
	var a CitusAudit
	for i, c := range cmds {
		a.Commands++
		text := strings.TrimSpace(c.Command)
		short := text
		if len(short) > 200 {
			short = short[:200] + "…"
		}
		upper := strings.ToUpper(text)
		switch {
		case strings.HasPrefix(upper, "PREPARE TRANSACTION"), strings.HasPrefix(upper, "COMMIT PREPARED"), strings.HasPrefix(upper, "ROLLBACK PREPARED"):
			a.TwoPhase++
			a.Violations = append(a.Violations, fmt.Sprintf("two-phase commit: %s sent %q to %s", c.From, short, c.To))
		case c.From != coordinator:
			a.Violations = append(a.Violations, fmt.Sprintf("a worker sent a command of a request on: %s sent %q to %s", c.From, short, c.To))
		case accountNodes[c.To]:
		case !framing(text) && backgroundRead(text):
			a.Background++
		case framing(text) && onlyBackground[legs[i]]:
		default:
			a.Violations = append(a.Violations, fmt.Sprintf("a node that holds none of the run's accounts: %s sent %q to %s", c.From, short, c.To))
		}
	}
	return a
}

// citusTransaction finds Citus's distributed transaction id in the command
// that opens a transaction on another node.
var citusTransaction = regexp.MustCompile(`assign_distributed_transaction_id\((\d+, \d+, '[^']*')\)`)

// framing reports whether command only frames a transaction (BEGIN with
// Citus's transaction id, COMMIT, ROLLBACK, savepoints).
func framing(command string) bool {
	u := strings.ToUpper(strings.TrimSpace(command))
	if strings.HasPrefix(u, "COMMIT PREPARED") || strings.HasPrefix(u, "ROLLBACK PREPARED") {
		return false
	}
	for _, p := range []string{"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT"} {
		if u == p || strings.HasPrefix(u, p+" ") || strings.HasPrefix(u, p+";") {
			return true
		}
	}
	return false
}

// backgroundRead reports whether command is a SELECT that names shards of
// the tables whose cross-account reads the background workers may make, and
// no other.
func backgroundRead(command string) bool {
	if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(command)), "SELECT") {
		return false
	}
	ms := shardName.FindAllStringSubmatch(command, -1)
	if len(ms) == 0 {
		return false
	}
	for _, m := range ms {
		if !citusBackgroundTables[m[1]] {
			return false
		}
	}
	return true
}

// CitusNodeLog is a node of a Citus cluster and the path of its server log.
type CitusNodeLog struct {
	Addr        string // host:port, as pg_dist_node names it
	Log         string
	Coordinator bool
}

// LocalCitusLogs finds the server log of every node of the private Citus
// cluster (LocalCitus) whose coordinator is coord, opened from url: each
// node's log is beside its data directory. It fails when a node does not log
// with citusLogPrefix (a node started before the cluster's settings had it:
// restart the cluster).
func LocalCitusLogs(ctx context.Context, coord *sqlx.DB, url string) ([]CitusNodeLog, error) {
	var nodes []struct {
		Host  string `db:"nodename"`
		Port  int    `db:"nodeport"`
		Group int    `db:"groupid"`
	}
	if err := coord.SelectContext(ctx, &nodes, `SELECT nodename, nodeport, groupid FROM pg_dist_node WHERE noderole = 'primary' ORDER BY groupid`); err != nil {
		return nil, fmt.Errorf("read the citus nodes: %w", err)
	}
	var out []CitusNodeLog
	for _, n := range nodes {
		addr := n.Host + ":" + strconv.Itoa(n.Port)
		u, err := nodeURL(url, addr)
		if err != nil {
			return nil, err
		}
		pool, err := Open(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("citus node %s: %w", addr, err)
		}
		var dataDir, prefix string
		err = pool.GetContext(ctx, &dataDir, `SELECT current_setting('data_directory')`)
		if err == nil {
			err = pool.GetContext(ctx, &prefix, `SELECT current_setting('log_line_prefix')`)
		}
		pool.Close()
		if err != nil {
			return nil, fmt.Errorf("citus node %s: %w", addr, err)
		}
		if prefix != citusLogPrefix {
			return nil, fmt.Errorf("citus node %s logs with the prefix %q, not %q: restart the private cluster (crm-server db citus stop)", addr, prefix, citusLogPrefix)
		}
		log := filepath.Join(filepath.Dir(dataDir), "postgresql.log")
		if _, err := os.Stat(log); err != nil {
			return nil, fmt.Errorf("citus node %s: its log is not where the private cluster keeps it: %w", addr, err)
		}
		out = append(out, CitusNodeLog{Addr: addr, Log: log, Coordinator: n.Group == 0})
	}
	return out, nil
}

// AccountNodes returns the addresses of the nodes that hold accounts.
func AccountNodes(ctx context.Context, coord *sqlx.DB, accounts []int64) (map[string]bool, error) {
	out := map[string]bool{}
	for _, a := range accounts {
		var addrs []string
		err := coord.SelectContext(ctx, &addrs, `
			SELECT n.nodename || ':' || n.nodeport
			  FROM pg_dist_placement p
			  JOIN pg_dist_node n ON n.groupid = p.groupid
			 WHERE p.shardid = get_shard_id_for_distribution_column('accounts', $1::bigint) AND n.noderole = 'primary'`, a)
		if err != nil {
			return nil, fmt.Errorf("the node of account %d: %w", a, err)
		}
		for _, addr := range addrs {
			out[addr] = true
		}
	}
	return out, nil
}

// AuditCitusRequests reads the remote commands of application app's sessions
// from the logs of every node of the private Citus cluster whose coordinator
// is coord (opened from url) and judges them, accounts being the accounts the
// run's requests served.
func AuditCitusRequests(ctx context.Context, coord *sqlx.DB, url, app string, accounts []int64) (CitusAudit, error) {
	logs, err := LocalCitusLogs(ctx, coord, url)
	if err != nil {
		return CitusAudit{}, err
	}
	accountNodes, err := AccountNodes(ctx, coord, accounts)
	if err != nil {
		return CitusAudit{}, err
	}
	var coordinator string
	var cmds []RemoteCommand
	local := map[string]int{}
	for _, n := range logs {
		if n.Coordinator {
			coordinator = n.Addr
		}
		f, err := os.Open(n.Log)
		if err != nil {
			return CitusAudit{}, err
		}
		c, l, err := ReadRemoteCommands(f, n.Addr, app)
		f.Close()
		if err != nil {
			return CitusAudit{}, err
		}
		cmds = append(cmds, c...)
		if l > 0 {
			local[n.Addr] = l
		}
	}
	a := JudgeRemoteCommands(cmds, coordinator, accountNodes)
	a.Local = local
	sort.Strings(a.Violations)
	return a, nil
}

// nodeURL is url with its host and port replaced by addr's.
func nodeURL(url, addr string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	u.Host = addr
	return u.String(), nil
}
