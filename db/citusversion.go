package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// Citus 13.2.1 and 13.2.2 break the plan cache of statements that a node runs
// on its own shards (docs/scale-out.md, "Citus versions"): every execution of
// a prepared fast-path statement plans it again and keeps the new plan in a
// list that is never freed, about 57 KB per execution. Upstream PR #8824
// fixes it; 13.2.0 predates it. A build with the fix applied still names
// itself 13.2.2, so the version alone cannot tell: ProbeLocalPlanCache
// measures it.

// CitusVersion is a Citus release, as citus_version() names it.
type CitusVersion struct {
	Major, Minor, Patch int
}

func (v CitusVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

var citusVersionText = regexp.MustCompile(`^Citus (\d+)\.(\d+)(?:\.(\d+))?`)

// ParseCitusVersion reads the release from the text of citus_version()
// ("Citus 13.2.2 on x86_64-pc-linux-gnu, compiled by ...").
func ParseCitusVersion(s string) (CitusVersion, error) {
	m := citusVersionText.FindStringSubmatch(s)
	if m == nil {
		return CitusVersion{}, fmt.Errorf("%q does not name a Citus release", s)
	}
	var v CitusVersion
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

// PlanCacheRegression is what a release's number says of the regression.
type PlanCacheRegression int

const (
	// RegressionUnknown: a release after 13.2.2; whether it has the fix is
	// for the probe to say.
	RegressionUnknown PlanCacheRegression = iota
	// RegressionAffected: 13.2.1 and 13.2.2 as released.
	RegressionAffected
	// RegressionAbsent: 13.2.0 and earlier, which predate it.
	RegressionAbsent
)

// LocalPlanCacheRegression classifies v.
func (v CitusVersion) LocalPlanCacheRegression() PlanCacheRegression {
	switch {
	case v.Major == 13 && v.Minor == 2 && (v.Patch == 1 || v.Patch == 2):
		return RegressionAffected
	case v.Major < 13 || v.Major == 13 && (v.Minor < 2 || v.Minor == 2 && v.Patch == 0):
		return RegressionAbsent
	}
	return RegressionUnknown
}

// PlanCacheProbe is what ProbeLocalPlanCache measured on one node.
type PlanCacheProbe struct {
	Node         string        // host:port
	Executions   int           // measured executions, after a warm-up
	BytesPerExec float64       // growth of the session's memory per execution
	PerExec      time.Duration // time of one execution, with its round trip
}

// planCacheLeak is the growth per execution above which a probe finds the
// regression: a sound build grows by nothing, an affected one by about 57 KB.
const planCacheLeak = 4096

// Leaks reports whether the session's memory grew with each execution.
func (p PlanCacheProbe) Leaks() bool { return p.BytesPerExec > planCacheLeak }

// ProbeLocalPlanCache measures, on a node that holds a shard of accounts, the
// memory of one session before and after executions of a prepared fast-path
// statement that reads that shard (SELECT count(*) FROM accounts WHERE id =
// $1, with a generic plan): an affected Citus grows by tens of kilobytes per
// execution. coord is the coordinator, opened from url; addresses maps a
// node's address to where this process reaches it (CITUS_NODES).
func ProbeLocalPlanCache(ctx context.Context, coord *sqlx.DB, url string, addresses map[string]string, executions int) (PlanCacheProbe, error) {
	var shard struct {
		Min  string `db:"shardminvalue"`
		Max  string `db:"shardmaxvalue"`
		Host string `db:"nodename"`
		Port int    `db:"nodeport"`
	}
	err := coord.GetContext(ctx, &shard, `
		SELECT s.shardminvalue, s.shardmaxvalue, n.nodename, n.nodeport
		  FROM pg_dist_shard s
		  JOIN pg_dist_placement p ON p.shardid = s.shardid
		  JOIN pg_dist_node n ON n.groupid = p.groupid
		 WHERE s.logicalrelid = to_regclass('accounts') AND n.isactive AND n.noderole = 'primary'
		 ORDER BY n.groupid, s.shardid
		 LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return PlanCacheProbe{}, errors.New("no shard of accounts on any node (is the database migrated?)")
	}
	if err != nil {
		return PlanCacheProbe{}, fmt.Errorf("find a shard of accounts: %w", err)
	}
	lo, err1 := strconv.ParseInt(shard.Min, 10, 32)
	hi, err2 := strconv.ParseInt(shard.Max, 10, 32)
	if err1 != nil || err2 != nil {
		return PlanCacheProbe{}, fmt.Errorf("shard range %s..%s of accounts is not a hash range", shard.Min, shard.Max)
	}
	id := int64(1)
	for h := HashInt8(id); int64(h) < lo || int64(h) > hi; h = HashInt8(id) {
		id++
	}
	p := PlanCacheProbe{Node: shard.Host + ":" + strconv.Itoa(shard.Port), Executions: executions}
	addr := p.Node
	if to, ok := addresses[addr]; ok {
		addr = to
	}
	u, err := nodeURL(url, addr)
	if err != nil {
		return p, err
	}
	pool, err := Open(ctx, u)
	if err != nil {
		return p, fmt.Errorf("citus node %s: %w", p.Node, err)
	}
	defer pool.Close()
	conn, err := pool.Connx(ctx)
	if err != nil {
		return p, fmt.Errorf("citus node %s: %w", p.Node, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		return p, err
	}
	stmt, err := conn.PreparexContext(ctx, `SELECT count(*) FROM accounts WHERE id = $1`)
	if err != nil {
		return p, err
	}
	defer stmt.Close()
	run := func(n int) error {
		for range n {
			var c int64
			if err := stmt.QueryRowContext(ctx, id).Scan(&c); err != nil {
				return err
			}
		}
		return nil
	}
	memory := func() (int64, error) {
		var b int64
		err := conn.GetContext(ctx, &b, `SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts`)
		return b, err
	}
	if err := run(20); err != nil {
		return p, err
	}
	before, err := memory()
	if err != nil {
		return p, fmt.Errorf("read the session's memory (pg_backend_memory_contexts needs a superuser or pg_read_all_stats): %w", err)
	}
	start := time.Now()
	if err := run(executions); err != nil {
		return p, err
	}
	p.PerExec = time.Since(start) / time.Duration(max(executions, 1))
	after, err := memory()
	if err != nil {
		return p, err
	}
	p.BytesPerExec = float64(after-before) / float64(max(executions, 1))
	return p, nil
}
