package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
)

// The Citus comparison (issue 23): the hot requests served by the current
// code on a Citus cluster (a coordinator and two workers under .data/citus,
// as make test-citus starts it), by the current code on plain PostgreSQL, and
// by the code of an earlier commit (-scaleout-baseline) on plain PostgreSQL,
// all three over data sets of the same size, in interleaved rounds. With
// -citus-stock, a second cluster started from the PostgreSQL binaries of that
// directory (with a Citus build of its own) is measured too.
//
// Every server is a process built from its sources, and reaches each of its
// database nodes through a proxy of the bench (proxy.go), which counts its
// round trips and, with -latency, adds a delay each way as a network would.
// The database's CPU per request is that of the backends of the measured
// database on all its nodes (cpu.go).

const (
	citusDir      = ".data/citus"
	citusStockDir = ".data/citus-stock"
	citusWorkers  = 2
	citusDatabase = "crm_bench"
	// plainOfCitusSize is the plain PostgreSQL database of the comparison,
	// beside crm_bench: the same data size as the Citus one.
	plainOfCitusSize = "crm_bench_citus_size"
	// defaultScaleOutBaseline is main before issue 23's work began.
	defaultScaleOutBaseline = "8c6e05a"
	// scaleOutMark begins the note of every record the comparison's writes
	// make, so that the next run removes them.
	scaleOutMark = "crm-bench scale-out"
)

// soSide is one server under test over one database.
type soSide struct {
	name    string
	env     *benchEnv
	extra   soExtra
	cpu     *cpuProbe
	proxies []*pgProxy
	stops   []func()
}

// soExtra are the ids the comparison's scenarios need besides benchEnv's.
type soExtra struct {
	bigCard, firstSmall, lastSmall int64   // counterparties with 1,000 and 20 contact persons
	deals                          []int64 // the account's own: on Citus its ids interleave with other accounts'
	goods                          []int64
	dealType, dealStage, taskType  int64
}

func (s *soSide) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	for _, p := range s.proxies {
		p.close()
	}
	if s.cpu != nil {
		s.cpu.close()
	}
}

func (s *soSide) roundTrips() int64 {
	var n int64
	for _, p := range s.proxies {
		n += p.roundTrips()
	}
	return n
}

func (s *soSide) setDelay(d time.Duration) {
	for _, p := range s.proxies {
		p.setDelay(d)
	}
}

// soScenarios are the requests of issue 23, item 1, for the data of x.
func soScenarios(e *benchEnv, x soExtra) []scenario {
	const cols = "columns=id,name,city,user_name,created"
	// Counterparties without contact persons: past the ones with 20, and
	// before the last 100, which take the contact persons inserted here.
	plainCo := func(rng *rand.Rand) int64 {
		lo, hi := x.lastSmall+1, e.lastCo-100
		if hi <= lo {
			return e.lastCo
		}
		return lo + rng.Int64N(hi-lo+1)
	}
	anyCo := func(rng *rand.Rand) int64 { return e.firstCo + rng.Int64N(e.lastCo-e.firstCo+1) }
	get := func(target func(rng *rand.Rand) string) func(*rand.Rand) (string, string, []byte) {
		return func(rng *rand.Rand) (string, string, []byte) { return http.MethodGet, target(rng), nil }
	}
	post := func(path string, body func(rng *rand.Rand) any) func(*rand.Rand) (string, string, []byte) {
		return func(rng *rand.Rand) (string, string, []byte) {
			b, _ := json.Marshal(body(rng))
			return http.MethodPost, path, b
		}
	}
	note := func(rng *rand.Rand) string { return fmt.Sprintf("%s %016x", scaleOutMark, rng.Uint64()) }
	today := time.Now().Format("2006-01-02")
	return []scenario{
		{name: "counterparty card", next: get(func(rng *rand.Rand) string { return fmt.Sprintf("/company/get?id=%d", plainCo(rng)) })},
		{name: "counterparty card, 20 contact persons", next: get(func(rng *rand.Rand) string {
			return fmt.Sprintf("/company/get?id=%d", x.firstSmall+rng.Int64N(x.lastSmall-x.firstSmall+1))
		})},
		{name: "counterparty card, 1,000 contact persons", next: get(func(*rand.Rand) string { return fmt.Sprintf("/company/get?id=%d", x.bigCard) })},
		{name: "contact list, 200 per page", next: get(func(*rand.Rand) string { return "/contact/list?records_onpage=200" })},
		{name: "first page of 50 counterparties", next: list(1, cols+"&records_onpage=50")},
		{name: "first page of 50 tasks", next: list(2, "columns=id,note,status,date_start,user_name,company_name&records_onpage=50")},
		{name: "first page of 50 deals", next: list(20, "columns=id,name,sum,status,company_name,user_name&records_onpage=50")},
		{name: "counterparties by name substring", next: list(1, cols+"&records_onpage=50&name=zephyr")},
		{name: "counterparties by e-mail", next: func(rng *rand.Rand) (string, string, []byte) {
			id := anyCo(rng)
			return http.MethodPost, fmt.Sprintf("/common/list/paging/1?%s&email=info%d@company%d.example", cols, id, id), nil
		}},
		{name: "counterparties by phone", next: func(rng *rand.Rand) (string, string, []byte) {
			return http.MethodPost, fmt.Sprintf("/common/list/paging/1?%s&phone=2%07d", cols, anyCo(rng)%10_000_000), nil
		}},
		{name: "counterparties by tax id", next: func(rng *rand.Rand) (string, string, []byte) {
			return http.MethodPost, fmt.Sprintf("/common/list/paging/1?%s&tax_id=40%08d", cols, rng.IntN(100_000_000)), nil
		}},
		// The dashboards before the writes: the writes add records of the
		// day to the user the dashboards show, and a dashboard measured
		// after them would hide its fixed cost behind the rows they added.
		{name: "dashboard: my day", next: get(func(*rand.Rand) string { return "/dashboard/my/day" })},
		{name: "dashboard: my tasks", next: get(func(*rand.Rand) string { return "/dashboard/my/tasks" })},
		{name: "dashboard: my KPI", next: get(func(*rand.Rand) string { return "/dashboard/kpi/my" })},
		{name: "dashboard: team KPI", next: get(func(*rand.Rand) string { return "/dashboard/kpi/team" })},
		{name: "counterparty insert, duplicate check", fresh: true, next: func(rng *rand.Rand) (string, string, []byte) {
			m := newMarker('h', rng)
			body, _ := json.Marshal(map[string]any{"name": insertedName + m, "type_id": e.typeID, "user_id": e.userID,
				"Emails": []any{map[string]any{"email": "a." + m + "@new.example"}, map[string]any{"email": "b." + m + "@new.example"}},
				"Phones": []any{map[string]any{"phone": fmt.Sprintf("+371 2%07d", rng.IntN(10_000_000))}, map[string]any{"phone": "+372 5000 0000"}}})
			return http.MethodPost, "/company/insert?check_duplicates=true", body
		}},
		{name: "contact insert", next: post("/contact/insert", func(rng *rand.Rand) any {
			return map[string]any{"company_id": e.lastCo - rng.Int64N(100), "last_name": "Bench", "first_name": "Anna", "note": note(rng),
				"Emails": []any{map[string]any{"email": fmt.Sprintf("c%016x@new.example", rng.Uint64())}},
				"Phones": []any{map[string]any{"phone": fmt.Sprintf("+371 2%07d", rng.IntN(10_000_000))}}}
		})},
		{name: "task insert", next: post("/task/insert", func(rng *rand.Rand) any {
			return map[string]any{"company_id": anyCo(rng), "note": note(rng), "type_id": x.taskType, "date_start": today + " 10:00"}
		})},
		{name: "deal insert, 3 goods positions", next: post("/deal/insert", func(rng *rand.Rand) any {
			var goods []any
			for i := range 3 {
				goods = append(goods, map[string]any{"goods_id": x.goods[(rng.IntN(len(x.goods))+i)%len(x.goods)], "qnt": 1 + rng.IntN(5)})
			}
			return map[string]any{"name": "Bench deal", "company_id": anyCo(rng), "type_id": x.dealType, "status_id": x.dealStage,
				"user_id": e.userID, "date_start": today, "date_finish": today, "sum": 1234.5, "note": note(rng), "Goods": goods}
		})},
		{name: "counterparty update", next: post("/company/update", func(rng *rand.Rand) any {
			return map[string]any{"id": plainCo(rng), "note": note(rng)}
		})},
		{name: "deal update", next: post("/deal/update", func(rng *rand.Rand) any {
			return map[string]any{"id": x.deals[rng.IntN(len(x.deals))], "note": note(rng)}
		})},
		{name: "event feed, a page of 100", next: get(func(*rand.Rand) string { return "/event/list?records_onpage=100" })},
	}
}

// soResult is what one scenario measured on one side, per round.
type soResult struct {
	p50, rps, cpu, trips []float64 // ms; req/s; ms of database CPU per request; round trips per request
	errors               int
	lastErr              string
	slowP50              []float64 // with -latency: p50 with the delay
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// compareScaleOut runs the comparison and returns its part of the report, or
// the one line that says why it was skipped.
func compareScaleOut(ctx context.Context, log *slog.Logger, plainURL string, o options, only func(string) bool) string {
	if o.citusCompanies <= 0 {
		return "**Citus:** skipped: -citus-companies is 0."
	}
	path, installed, err := db.CitusLibrary()
	switch {
	case err != nil:
		return "**Citus:** skipped: " + err.Error() + "."
	case !installed:
		return "**Citus:** skipped: the citus extension is not installed (" + path + " is missing)."
	}
	text, err := scaleOutReport(ctx, log, plainURL, o, only)
	if err != nil {
		return "**Citus:** failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + "."
	}
	return text
}

func scaleOutReport(ctx context.Context, log *slog.Logger, plainURL string, o options, only func(string) bool) (string, error) {
	oc := o
	oc.companies, oc.regen = o.citusCompanies, false

	bins, err := buildServers(ctx, log, o.scaleOutBaseline)
	if err != nil {
		return "", err
	}
	defer bins.cleanup()

	var sides []*soSide
	defer func() {
		for _, s := range sides {
			s.close()
		}
	}()
	plainSmall, err := sibling(ctx, plainURL, plainOfCitusSize)
	if err != nil {
		return "", err
	}
	plainData, err := prepareScaleOutData(ctx, log, plainSmall, oc)
	if err != nil {
		return "", fmt.Errorf("data set on PostgreSQL: %w", err)
	}
	if bins.old != "" {
		oldURL, err := baselineURLAt(ctx, plainSmall, bins.oldMigrations)
		if err != nil {
			return "", err
		}
		s, err := startSide(ctx, "PostgreSQL, "+o.scaleOutBaseline, bins.old, oldURL, []string{plainSmall}, plainData, bins.dir)
		if err != nil {
			return "", err
		}
		sides = append(sides, s)
	}
	s, err := startSide(ctx, "PostgreSQL", bins.cur, plainSmall, []string{plainSmall}, plainData, bins.dir)
	if err != nil {
		return "", err
	}
	sides = append(sides, s)

	type cluster struct {
		name, dir, bin string
		env            []string // of its server
	}
	clusters := []cluster{{"Citus", citusDir, "", nil}}
	if o.citusStock != "" {
		// Its sessions grow by every statement (13.2.1, 13.2.2): the server
		// replaces them as an operator would (docs/scale-out.md).
		var env []string
		if o.citusStockLifetime > 0 {
			env = append(env, "DB_CONN_MAX_LIFETIME="+o.citusStockLifetime.String())
		}
		clusters = append(clusters, cluster{"Citus, " + o.citusStockName, citusStockDir, o.citusStock, env})
	}
	var versions []string
	for _, cl := range clusters {
		urls, version, err := citusSide(ctx, log, cl.dir, cl.bin, oc)
		if err != nil {
			return "", fmt.Errorf("%s: %w", cl.name, err)
		}
		v := cl.name + ": Citus " + version
		for _, e := range cl.env {
			v += ", its server with " + e
		}
		versions = append(versions, v)
		data, err := prepareScaleOutData(ctx, log, urls[0], oc)
		if err != nil {
			return "", fmt.Errorf("data set on %s: %w", cl.name, err)
		}
		s, err := startSide(ctx, cl.name, bins.cur, urls[0], urls, data, bins.dir, cl.env...)
		if err != nil {
			return "", err
		}
		sides = append(sides, s)
	}

	lists := make([][]scenario, len(sides))
	for i, s := range sides {
		for _, sc := range soScenarios(s.env, s.extra) {
			if only(sc.name) {
				lists[i] = append(lists[i], sc)
			}
		}
	}
	results := make([][]soResult, len(sides))
	for i := range sides {
		results[i] = make([]soResult, len(lists[0]))
	}
	var plainSides []int // the sides the delayed measurement runs on
	for i, s := range sides {
		if !strings.HasPrefix(s.name, "Citus") {
			plainSides = append(plainSides, i)
		}
	}
	eta := startETA(log, o.progressEvery, len(lists[0]), time.Duration(o.scaleOutRounds*len(sides))*2*(o.scaleOutDuration+o.warmup))
	defer eta.stop()
	for k := range lists[0] {
		eta.begin(k, lists[0][k].name)
		for round := range o.scaleOutRounds {
			// Rotate which side goes first, so that a drift of the machine's
			// load weighs on all alike.
			for j := range sides {
				i := (j + round) % len(sides)
				if err := measureSide(ctx, sides[i], lists[i][k], &results[i][k], oc); err != nil {
					return "", err
				}
			}
		}
		if o.latency > 0 {
			// The plain sides with the proxies' delay, right after the
			// scenario's rounds, one after the other, the order turned at
			// each scenario: a read is measured before the write scenarios
			// have grown either side's data (a faster side inserts more rows
			// in the same time), and a drift of the machine's speed falls on
			// both alike.
			order := slices.Clone(plainSides)
			if k%2 == 1 {
				slices.Reverse(order)
			}
			for _, i := range order {
				s := sides[i]
				s.setDelay(o.latency)
				err := measureLatency(ctx, s, lists[i][k], &results[i][k], oc)
				s.setDelay(0)
				if err != nil {
					return "", err
				}
			}
		}
		line := fmt.Sprintf("%-44s", lists[0][k].name)
		for i, s := range sides {
			line += fmt.Sprintf(" | %s %.2f ms %.0f/s cpu %.2f", s.name, median(results[i][k].p50), median(results[i][k].rps), median(results[i][k].cpu))
		}
		fmt.Println(line)
	}
	return renderScaleOut(sides, lists[0], results, oc, versions), nil
}

// pairedRatio is the median of the rounds' ratios a[r]/b[r]: a and b are
// measured in the same round, one after the other, so that each ratio holds
// the machine's speed of one moment, which a ratio of the medians mixes.
func pairedRatio(a, b []float64) float64 {
	var ratios []float64
	for r := range min(len(a), len(b)) {
		if b[r] > 0 {
			ratios = append(ratios, a[r]/b[r])
		}
	}
	return median(ratios)
}

// measureSide runs one round of sc on s: one client for the median, then
// o.clients for the throughput, the database's CPU and the round trips.
func measureSide(ctx context.Context, s *soSide, sc scenario, r *soResult, o options) error {
	e := s.env
	var made atomic.Int64 // requests made, the warm-up's included
	worker := func() (worker, func(), error) {
		return func(ctx context.Context, rng *rand.Rand) error {
			method, target, body := sc.next(rng)
			made.Add(1)
			_, _, err := e.call(ctx, method, target, body)
			if err != nil && r.lastErr == "" {
				r.lastErr = firstLines([]byte(err.Error()))
			}
			return err
		}, func() {}, nil
	}
	po := o
	po.duration = o.scaleOutDuration
	lat, errs, err := load(ctx, 1, po, worker)
	if err != nil {
		return err
	}
	r.errors += errs
	r.p50 = append(r.p50, float64(summarize(lat).p50.Microseconds())/1000)

	po.warmup = o.warmup / 2
	before, err := s.cpu.snapshot(ctx)
	if err != nil {
		return err
	}
	trips := s.roundTrips()
	made.Store(0)
	lat, errs, err = load(ctx, o.clients, po, worker)
	if err != nil {
		return err
	}
	after, err := s.cpu.snapshot(ctx)
	if err != nil {
		return err
	}
	// The CPU and the round trips are those of every request made in the
	// phase, the warm-up's included.
	r.errors += errs
	r.rps = append(r.rps, float64(len(lat))/po.duration.Seconds())
	if n := float64(made.Load()); n > 0 {
		r.cpu = append(r.cpu, float64(after.since(before).Microseconds())/1000/n)
		r.trips = append(r.trips, float64(s.roundTrips()-trips)/n)
	}
	return nil
}

// measureLatency is the median of sc with the proxies' delay on.
func measureLatency(ctx context.Context, s *soSide, sc scenario, r *soResult, o options) error {
	po := o
	po.duration = o.scaleOutDuration
	lat, _, err := load(ctx, 1, po, func() (worker, func(), error) {
		return func(ctx context.Context, rng *rand.Rand) error {
			method, target, body := sc.next(rng)
			_, _, err := s.env.call(ctx, method, target, body)
			return err
		}, func() {}, nil
	})
	if err != nil {
		return err
	}
	r.slowP50 = append(r.slowP50, float64(summarize(lat).p50.Microseconds())/1000)
	return nil
}

// serverBins are the servers of the comparison, built from their sources.
type serverBins struct {
	dir, old, cur string
	oldMigrations int // the newest migration the old server knows
	cleanup       func()
}

// buildServers builds the current server and, when rev is set and in the
// repository, the server of rev.
func buildServers(ctx context.Context, log *slog.Logger, rev string) (*serverBins, error) {
	dir, err := os.MkdirTemp("", "crm-bench-scaleout")
	if err != nil {
		return nil, err
	}
	b := &serverBins{dir: dir, cleanup: func() { os.RemoveAll(dir) }}
	b.cur = filepath.Join(dir, "crm-server")
	log.Info("building the current server")
	if _, err := output(ctx, "", "go", "build", "-o", b.cur, "./cmd/crm-server"); err != nil {
		b.cleanup()
		return nil, fmt.Errorf("build the current server: %w", err)
	}
	if rev == "" {
		return b, nil
	}
	sha, err := output(ctx, "", "git", "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		log.Warn("the baseline commit is not in this repository (a shallow clone?): measuring without it", "rev", rev)
		return b, nil
	}
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		b.cleanup()
		return nil, err
	}
	if _, err := output(ctx, "", "sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", sha, src); err != nil {
		b.cleanup()
		return nil, fmt.Errorf("git archive %s: %w", rev, err)
	}
	log.Info("building the baseline's server", "rev", rev)
	b.old = filepath.Join(dir, "crm-server-"+rev)
	if _, err := output(ctx, src, "go", "build", "-o", b.old, "./cmd/crm-server"); err != nil {
		b.cleanup()
		return nil, fmt.Errorf("build %s: %w", rev, err)
	}
	if b.oldMigrations, err = lastMigration(filepath.Join(src, "db", "migrations")); err != nil {
		b.cleanup()
		return nil, err
	}
	return b, nil
}

// baselineURLAt is baselineURL for the database at url.
func baselineURLAt(ctx context.Context, url string, known int) (string, error) {
	pool, err := db.Open(ctx, url)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	return baselineURL(ctx, pool, url, known)
}

// citusSide starts the cluster in dir (from the PostgreSQL binaries in bin,
// or the installed ones when bin is empty) and returns the URLs of the bench
// database on its coordinator and workers, and its Citus version.
func citusSide(ctx context.Context, log *slog.Logger, dir, bin string, o options) ([]string, string, error) {
	if bin != "" {
		// The cluster's binaries are found through PATH (db.findPGBinDir).
		old := os.Getenv("PATH")
		os.Setenv("PATH", bin+string(os.PathListSeparator)+old)
		defer os.Setenv("PATH", old)
	}
	key := fmt.Sprintf("%d/%d", o.companies, o.accounts)
	log.Info("starting the Citus cluster", "dir", dir)
	cluster, err := db.EnsureLocalCitus(ctx, dir, citusWorkers, citusDatabase, log)
	if err != nil {
		return nil, "", err
	}
	// A data set of another size, or one whose generation did not finish, is
	// not dropped table by table on Citus (dropping the schema breaks the
	// extension's metadata): the database is made again.
	if stored, _ := storedKey(ctx, cluster.URL(citusDatabase)); stored != key || o.regen {
		if err := db.DropLocalCitusDatabase(ctx, dir, citusDatabase); err != nil {
			return nil, "", err
		}
		if cluster, err = db.EnsureLocalCitus(ctx, dir, citusWorkers, citusDatabase, log); err != nil {
			return nil, "", err
		}
	}
	urls := []string{cluster.URL(citusDatabase)}
	for _, w := range cluster.Workers {
		urls = append(urls, w.URL(citusDatabase))
	}
	pool, err := db.Open(ctx, urls[0])
	if err != nil {
		return nil, "", err
	}
	defer pool.Close()
	var version string
	if err := pool.GetContext(ctx, &version, `SELECT extversion FROM pg_extension WHERE extname = 'citus'`); err != nil {
		return nil, "", err
	}
	var full string
	if err := pool.GetContext(ctx, &full, `SELECT citus_version()`); err == nil {
		if f := strings.Fields(full); len(f) > 1 {
			version = f[1]
		}
	}
	return urls, version, nil
}

// soData is a side's data set with what the comparison adds to it.
type soData struct {
	url   string
	data  *dataSet
	extra soExtra
}

// prepareScaleOutData makes the data set at url (the generated counterparties,
// contact persons, goods and KPI plans) and removes what earlier runs wrote.
func prepareScaleOutData(ctx context.Context, log *slog.Logger, url string, o options) (*soData, error) {
	data, err := ensureData(ctx, log, url, o)
	if err != nil {
		return nil, err
	}
	if err := removeEarlierInserts(ctx, log, url, data); err != nil {
		return nil, err
	}
	contacts, err := ensureContacts(ctx, log, url, data)
	if err != nil {
		return nil, err
	}
	defer contacts.pool.Close()
	d := &soData{url: url, data: data, extra: soExtra{bigCard: contacts.bigCard, firstSmall: contacts.firstSmall, lastSmall: contacts.lastSmall}}
	pool, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := scaleOutFixtures(ctx, pool, data.Accounts[0], &d.extra); err != nil {
		return nil, err
	}
	return d, nil
}

// scaleOutFixtures gives the big account what the comparison's requests
// need beyond the generated data set (goods of the catalogue, a KPI plan of
// this month for each user) and removes the records earlier runs wrote.
func scaleOutFixtures(ctx context.Context, pool *sqlx.DB, acc int64, x *soExtra) error {
	// What earlier runs wrote, children first.
	for _, stmt := range []string{
		`DELETE FROM deal_goods g USING deals d WHERE g.account_id = $1 AND d.account_id = $1 AND d.id = g.deal_id AND d.note LIKE $2`,
		`DELETE FROM deals WHERE account_id = $1 AND note LIKE $2`,
		`DELETE FROM tasks WHERE account_id = $1 AND note LIKE $2`,
		`DELETE FROM emails e USING contacts c WHERE e.account_id = $1 AND c.account_id = $1 AND c.id = e.contact_id AND c.note LIKE $2`,
		`DELETE FROM phones p USING contacts c WHERE p.account_id = $1 AND c.account_id = $1 AND c.id = p.contact_id AND c.note LIKE $2`,
		`DELETE FROM contacts WHERE account_id = $1 AND note LIKE $2`,
	} {
		if _, err := pool.ExecContext(ctx, stmt, acc, scaleOutMark+"%"); err != nil {
			return fmt.Errorf("remove what earlier runs wrote: %w", err)
		}
	}
	var n int
	if err := pool.GetContext(ctx, &n, `SELECT count(*) FROM goods WHERE account_id = $1`, acc); err != nil {
		return err
	}
	if n == 0 {
		if _, err := pool.ExecContext(ctx, `
			INSERT INTO goods (account_id, name, code, price, vat)
			SELECT $1, 'Bench goods ' || i, 'B' || i, 10 * i + 0.99, 21 FROM generate_series(1, 20) i`, acc); err != nil {
			return fmt.Errorf("goods: %w", err)
		}
	}
	if err := pool.SelectContext(ctx, &x.goods, `SELECT id FROM goods WHERE account_id = $1 ORDER BY id`, acc); err != nil {
		return err
	}
	// The admin reads the team KPI of every user and department.
	if _, err := pool.ExecContext(ctx, `UPDATE users SET kpi_users_report = true, kpi_departments_report = true
		WHERE account_id = $1 AND role = 'admin' AND NOT (kpi_users_report AND kpi_departments_report)`, acc); err != nil {
		return fmt.Errorf("KPI rights: %w", err)
	}
	month := time.Now().Format("2006-01") + "-01"
	if _, err := pool.ExecContext(ctx, `
		INSERT INTO kpi_plans (account_id, user_id, month)
		SELECT $1, id, $2::date FROM users WHERE account_id = $1
		ON CONFLICT (account_id, user_id, month) DO NOTHING`, acc, month); err != nil {
		return fmt.Errorf("KPI plans: %w", err)
	}
	if _, err := pool.ExecContext(ctx, `
		INSERT INTO kpi_plan_items (account_id, plan_id, name, metric, plan_value)
		SELECT $1, p.id, m, m, 100 FROM kpi_plans p,
		       unnest(ARRAY['companies_added', 'tasks_done', 'deals_created', 'deal_sum', 'invoices_issued', 'invoice_sum', 'income']) m
		 WHERE p.account_id = $1 AND p.month = $2::date
		ON CONFLICT (account_id, plan_id, metric) DO NOTHING`, acc, month); err != nil {
		return fmt.Errorf("KPI plan items: %w", err)
	}
	for code, into := range map[int]*int64{40: &x.dealType, 41: &x.dealStage, 35: &x.taskType} {
		if err := pool.GetContext(ctx, into, `SELECT min(id) FROM directory_values WHERE account_id = $1 AND directory_code = $2`, acc, code); err != nil {
			return fmt.Errorf("directory %d: %w", code, err)
		}
	}
	// The deals the deal update changes: the data set may give the account
	// none (the deal insert's own are removed at each run), so 200 of the
	// bench's own, kept from run to run.
	var benchDeals int
	if err := pool.GetContext(ctx, &benchDeals, `SELECT count(*) FROM deals WHERE account_id = $1 AND note = 'crm-bench deal'`, acc); err != nil {
		return fmt.Errorf("deals: %w", err)
	}
	if benchDeals == 0 {
		var owners []struct {
			ID     int64 `db:"id"`
			UserID int64 `db:"user_id"`
		}
		if err := pool.SelectContext(ctx, &owners, `SELECT id, user_id FROM companies
			WHERE account_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 200`, acc); err != nil {
			return fmt.Errorf("deals: %w", err)
		}
		for i, c := range owners {
			if _, err := pool.ExecContext(ctx, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id,
				date_start, date_finish, sum, note) VALUES ($1, $2, $3, $4, $5, $6, current_date, current_date, 1000, 'crm-bench deal')`,
				acc, fmt.Sprintf("Bench deal %d", i+1), c.ID, x.dealType, x.dealStage, c.UserID); err != nil {
				return fmt.Errorf("deals: %w", err)
			}
		}
	}
	if err := pool.SelectContext(ctx, &x.deals, `SELECT id FROM deals WHERE account_id = $1 ORDER BY id`, acc); err != nil {
		return fmt.Errorf("deals: %w", err)
	}
	if len(x.deals) == 0 {
		return errors.New("deals: the account has none")
	}
	// cross-account: maintenance of whole tables, in the benchmark's own database.
	_, err := pool.ExecContext(ctx, `VACUUM ANALYZE deals, tasks, contacts, goods, kpi_plans, kpi_plan_items`)
	return err
}

// startSide serves the database of d (nodes: the URLs of its nodes, the
// first the one the server is given) with bin, through a proxy per node.
func startSide(ctx context.Context, name, bin, url string, nodes []string, d *soData, dir string, env ...string) (*soSide, error) {
	s := &soSide{name: name, extra: d.extra}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	var mapping []string
	serverURL := url
	for i, n := range nodes {
		hp, err := parseHostPort(n)
		if err != nil {
			return nil, err
		}
		p, err := startProxy(hp)
		if err != nil {
			return nil, err
		}
		s.proxies = append(s.proxies, p)
		if i == 0 {
			if serverURL, err = withHost(url, p.addr()); err != nil {
				return nil, err
			}
		} else {
			mapping = append(mapping, hp+"="+p.addr())
		}
	}
	if len(mapping) > 0 {
		env = append(env, "CITUS_NODES="+strings.Join(mapping, ","))
	}
	base, stop, err := startServerEnv(ctx, bin, serverURL, filepath.Join(dir, strings.NewReplacer(" ", "-", ",", "", ".", "").Replace(name)+".log"), env)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", name, err)
	}
	s.stops = append(s.stops, stop)
	pool, err := db.Open(ctx, d.url)
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { pool.Close() })
	if s.env, err = newBenchEnv(ctx, pool, d.data, base); err != nil {
		return nil, err
	}
	probe := &cpuProbe{}
	for _, n := range nodes {
		p, err := db.Open(ctx, n)
		if err != nil {
			return nil, err
		}
		p.SetMaxOpenConns(1)
		probe.nodes = append(probe.nodes, p)
	}
	s.cpu = probe
	ok = true
	return s, nil
}

// renderScaleOut is the report of the comparison.
func renderScaleOut(sides []*soSide, list []scenario, results [][]soResult, o options, versions []string) string {
	var b strings.Builder
	plain, citus := -1, -1
	for i, s := range sides {
		switch s.name {
		case "PostgreSQL":
			plain = i
		case "Citus":
			citus = i
		}
	}
	fmt.Fprintf(&b, "**Citus** (issue 23): each request on plain PostgreSQL and on a Citus cluster (a coordinator and %d workers on this machine, "+
		"started as `make test-citus` starts it; %s), both over a data set of %d counterparties over %d accounts, served by the current code, "+
		"and on plain PostgreSQL by the code of %s; each server a process built from its sources, reaching every node through a proxy of the bench "+
		"that counts its round trips. %d interleaved rounds of %s per side and scenario; medians of the rounds "+
		"(of PostgreSQL/%s req/s, the median of each round's ratio: the two sides run one after the other in a round). "+
		"p50 with one client; req/s with %d clients; CPU: the database's, per request, summed over its nodes (the backends of the database, "+
		"/proc/<pid>/schedstat); trips: round trips from the server to the database per request. "+
		"Targets: Citus p50 within 1.5× or 1 ms of PostgreSQL, its CPU at most 2.5× PostgreSQL's, and PostgreSQL's req/s at least 0.95× of %s's.\n\n",
		citusWorkers, strings.Join(versions, "; "), o.companies, o.accounts, o.scaleOutBaseline, o.scaleOutRounds, o.scaleOutDuration, o.scaleOutBaseline, o.clients, o.scaleOutBaseline)
	b.WriteString("| scenario |")
	for _, s := range sides {
		fmt.Fprintf(&b, " %s p50 | req/s | CPU | trips |", s.name)
	}
	b.WriteString(" Citus/PostgreSQL p50 | CPU | PostgreSQL/" + o.scaleOutBaseline + " req/s | verdict | errors |\n|---|")
	for range sides {
		b.WriteString("---:|---:|---:|---:|")
	}
	b.WriteString("---:|---:|---:|---|---:|\n")
	for k, sc := range list {
		fmt.Fprintf(&b, "| %s |", sc.name)
		errs := 0
		for i := range sides {
			r := results[i][k]
			errs += r.errors
			fmt.Fprintf(&b, " %.2f | %.0f | %.3f | %.1f |", median(r.p50), median(r.rps), median(r.cpu), median(r.trips))
		}
		verdict := []string{}
		if plain >= 0 && citus >= 0 {
			p, c := results[plain][k], results[citus][k]
			lat := median(c.p50) / median(p.p50)
			cpu := median(c.cpu) / median(p.cpu)
			fmt.Fprintf(&b, " %.2f× | %.2f× |", lat, cpu)
			if lat > 1.5 && median(c.p50)-median(p.p50) > 1 {
				verdict = append(verdict, "p50 MISSED")
			}
			if cpu > 2.5 {
				verdict = append(verdict, "CPU MISSED")
			}
		} else {
			b.WriteString(" – | – |")
		}
		if plain >= 0 && sides[0].name != "PostgreSQL" && sides[0].name != "Citus" {
			ratio := pairedRatio(results[plain][k].rps, results[0][k].rps)
			fmt.Fprintf(&b, " %.2f× |", ratio)
			if ratio < 0.95 {
				verdict = append(verdict, "req/s MISSED")
			}
		} else {
			b.WriteString(" – |")
		}
		if errs > 0 {
			verdict = append(verdict, "ERRORS: not measured")
		}
		if len(verdict) == 0 {
			verdict = append(verdict, "met")
		}
		fmt.Fprintf(&b, " %s | %d |\n", strings.Join(verdict, ", "), errs)
	}
	b.WriteString("\n")
	if o.latency > 0 {
		fmt.Fprintf(&b, "With %s added each way between each server and PostgreSQL (the proxy), p50 in ms (one run of each scenario per side, right after the scenario's rounds, the sides one after the other, in turns):\n\n| scenario |", o.latency)
		var shown []int
		for i, s := range sides {
			if !strings.HasPrefix(s.name, "Citus") {
				shown = append(shown, i)
				fmt.Fprintf(&b, " %s |", s.name)
			}
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(shown)) + "\n")
		for k, sc := range list {
			fmt.Fprintf(&b, "| %s |", sc.name)
			for _, i := range shown {
				fmt.Fprintf(&b, " %.2f |", median(results[i][k].slowP50))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	for i, s := range sides {
		for k, sc := range list {
			if e := results[i][k].lastErr; e != "" {
				fmt.Fprintf(&b, "- %s, %s: %d errors, the first: `%s`\n", s.name, sc.name, results[i][k].errors, e)
			}
		}
	}
	return b.String()
}
