package main

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// The database's CPU per request (issue 23 item 2): the processor time of
// every backend of the measured database on every node of the cluster, read
// from /proc/<pid>/schedstat (the scheduler's own count of nanoseconds on a
// CPU, exact, not sampled at ticks) before and after a phase. Only the
// backends of that database count, so the other databases of a shared server
// (another test run, the other side of the comparison) add nothing; the
// background processes of the server (the WAL writer, the checkpointer) are
// left out on both sides. The nodes must run on this machine.

// cpuProbe reads the backends of one database on each node.
type cpuProbe struct {
	nodes []*sqlx.DB // a pool on each node, in the measured database
}

// cpuSnapshot maps each backend (node index and pid) to its time on a CPU.
type cpuSnapshot map[[2]int]time.Duration

// snapshot reads the CPU time of the database's backends on every node.
func (c *cpuProbe) snapshot(ctx context.Context) (cpuSnapshot, error) {
	out := cpuSnapshot{}
	for i, n := range c.nodes {
		var pids []int
		// cross-account: the backends of the bench's database, for their CPU time.
		if err := n.SelectContext(ctx, &pids, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`); err != nil {
			return nil, fmt.Errorf("list backends: %w", err)
		}
		for _, pid := range pids {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
			if err != nil {
				continue // it ended meanwhile, or the node is elsewhere
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue
			}
			out[[2]int{i, pid}] = time.Duration(ns)
		}
	}
	return out, nil
}

// since is the CPU time the backends used from before to s; a backend that
// started in between counts whole, one that ended is lost (the pools keep
// their connections, so few do).
func (s cpuSnapshot) since(before cpuSnapshot) time.Duration {
	var d time.Duration
	for k, v := range s {
		d += v - before[k]
	}
	return d
}

// close closes the probe's pools.
func (c *cpuProbe) close() {
	for _, n := range c.nodes {
		n.Close()
	}
}

// parseHostPort is the host:port of a database URL.
func parseHostPort(raw string) (string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return u.Hostname() + ":5432", nil
	}
	return u.Host, nil
}

// withHost is the database URL raw with host:port replaced.
func withHost(raw, hostPort string) (string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Host = hostPort
	return u.String(), nil
}
