// Command crm-bench measures the server at scale: it generates (once) a data set
// of a million counterparties over 20 accounts, one of them holding half, serves
// the API on loopback, drives it over HTTP with concurrent clients, replays the
// very statements the server ran directly against PostgreSQL, and writes the
// report into docs/benchmarks.md.
//
//	go run ./cmd/crm-bench [-companies 1000000] [-clients 8] [-duration 5s] [-report docs/benchmarks.md] [-cpuprofile dir]
//
// The database is "crm_bench" on the server of DATABASE_URL, or of the private
// cluster under ./.data; it is kept between runs (new migrations are applied to
// it) and generated again when its size changes or with -regenerate.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, log, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "crm-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	companies int
	accounts  int
	clients   int
	duration  time.Duration
	warmup    time.Duration
	report    string
	regen     bool
	explain   bool
	database  string
	profile   string
	only      string

	citusCompanies int
	baseline       string // a commit whose server's insert is measured beside the current one's (baseline.go)
	baselineRounds int

	// The Citus comparison (scaleout.go).
	scaleOutOnly       bool
	scaleOutBaseline   string
	scaleOutRounds     int
	scaleOutDuration   time.Duration
	latency            time.Duration
	citusStock         string
	citusStockName     string
	citusStockLifetime time.Duration

	// Not flags: tests make them small, or keep the row triggers on in a
	// load (rowTriggers) to compare with the bulk fill.
	progressEvery time.Duration
	chunkRows     int
	rowTriggers   bool
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	o := options{progressEvery: progressEvery, chunkRows: chunkRows}
	flag := flag.NewFlagSet("crm-bench", flag.ContinueOnError)
	flag.IntVar(&o.companies, "companies", 1_000_000, "counterparties in all accounts (half in the big one)")
	flag.IntVar(&o.accounts, "accounts", 20, "accounts")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients of the throughput measurements")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measuring time per scenario and side")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up time per scenario")
	flag.StringVar(&o.report, "report", "docs/benchmarks.md", "file whose list section gets the report (\"\": print only)")
	flag.BoolVar(&o.regen, "regenerate", false, "generate the data set again even if it is current")
	flag.BoolVar(&o.explain, "explain", false, "print the plans (EXPLAIN ANALYZE) of each scenario's statements instead of measuring")
	flag.StringVar(&o.database, "database", "", "URL of the database to use (default: crm_bench, created when missing)")
	flag.IntVar(&o.citusCompanies, "citus-companies", 10_000, "counterparties of the Citus comparison, on Citus and on plain PostgreSQL (0: no comparison); it runs where the citus extension is installed")
	flag.StringVar(&o.baseline, "baseline", defaultBaseline, "commit whose server's insert wrk measures beside the current code's, both built and served over the bench's database (\"\": none)")
	flag.IntVar(&o.baselineRounds, "baseline-rounds", 3, "rounds of the baseline comparison, each driving both servers in turn")
	flag.BoolVar(&o.scaleOutOnly, "scaleout-only", false, "run the Citus comparison alone (no data set of -companies, no report of the other scenarios)")
	flag.StringVar(&o.scaleOutBaseline, "scaleout-baseline", defaultScaleOutBaseline, "commit whose server the Citus comparison also measures on plain PostgreSQL (\"\": none)")
	flag.IntVar(&o.scaleOutRounds, "scaleout-rounds", 3, "interleaved rounds of the Citus comparison")
	flag.DurationVar(&o.scaleOutDuration, "scaleout-duration", 2*time.Second, "measuring time per round, side and scenario of the Citus comparison")
	flag.DurationVar(&o.latency, "latency", 250*time.Microsecond, "delay each way between server and PostgreSQL in the comparison's last phase (0: none)")
	flag.StringVar(&o.citusStock, "citus-stock", "", "directory of other PostgreSQL server binaries, beside which another Citus build is installed: the comparison measures a cluster of those too")
	flag.StringVar(&o.citusStockName, "citus-stock-name", "stock build", "how the report names the cluster of -citus-stock")
	flag.DurationVar(&o.citusStockLifetime, "citus-stock-lifetime", 30*time.Second, "DB_CONN_MAX_LIFETIME of the server over the cluster of -citus-stock, whose sessions may grow by every statement (0: none)")
	flag.StringVar(&o.only, "scenarios", "", "run only the scenarios whose name matches this regular expression")
	flag.StringVar(&o.profile, "cpuprofile", "", "directory that gets a CPU profile of each scenario's HTTP load phase (go tool pprof), named after it")
	if err := flag.Parse(args); err != nil {
		return err
	}

	url := o.database
	if url == "" {
		var err error
		if url, err = benchDatabase(ctx, log, o); err != nil {
			return err
		}
	}
	only := func(string) bool { return true }
	if o.only != "" {
		re, err := regexp.Compile(o.only)
		if err != nil {
			return fmt.Errorf("-scenarios: %w", err)
		}
		only = re.MatchString
	}
	if o.scaleOutOnly {
		citus := compareScaleOut(ctx, log, url, o, only)
		fmt.Println(citus)
		if o.report == "" {
			return nil
		}
		return writeNamedSection(o.report, "citus", citus)
	}
	data, err := ensureData(ctx, log, url, o)
	if err != nil {
		return err
	}
	if err := removeEarlierInserts(ctx, log, url, data); err != nil {
		return err
	}

	sd, err := openSide(ctx, url, data)
	if err != nil {
		return err
	}
	defer sd.close()
	m := machine(ctx, sd.env.pool)
	contacts, err := ensureContacts(ctx, log, url, data)
	if err != nil {
		return err
	}
	defer contacts.pool.Close()
	list := slices.DeleteFunc(append(scenarios(sd.env), contactScenarios(contacts)...), func(sc scenario) bool { return !only(sc.name) })
	results, err := sd.runScenarios(ctx, log, list, o, true)
	if err != nil {
		return err
	}
	var base *baselineResult
	if i := slices.IndexFunc(list, func(sc scenario) bool { return sc.fresh && sc.wrk }); i >= 0 && !o.explain {
		base = compareBaseline(ctx, log, url, sd.env, list[i], o)
		base.scenario = list[i].name
	}
	sd.close()
	if o.explain {
		return nil
	}
	citus := compareScaleOut(ctx, log, url, o, only)
	fmt.Println(citus)
	report := renderReport(data, o, results, m, base)
	if o.report == "" {
		fmt.Println(report)
		return nil
	}
	if err := writeSection(o.report, report); err != nil {
		return err
	}
	return writeNamedSection(o.report, "citus", citus)
}

func withParam(raw, key, value string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// benchDatabase returns the URL of the crm_bench database, creating it when missing.
func benchDatabase(ctx context.Context, log *slog.Logger, o options) (string, error) {
	server := os.Getenv("DATABASE_URL")
	if server == "" {
		cluster, err := db.EnsureLocal(ctx, ".data", log)
		if err != nil {
			return "", err
		}
		server = cluster.URL("postgres")
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	admin, err := db.Open(ctx, u.String())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var exists bool
	if err := admin.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'crm_bench')`); err != nil {
		return "", err
	}
	if exists && o.regen {
		if _, err := admin.ExecContext(ctx, `DROP DATABASE crm_bench WITH (FORCE)`); err != nil {
			return "", err
		}
		exists = false
	}
	if !exists {
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE crm_bench`); err != nil {
			return "", err
		}
	}
	u.Path = "/crm_bench"
	return u.String(), nil
}

// ensureData generates the data set unless the database holds one made by the
// same migrations and size.
func ensureData(ctx context.Context, log *slog.Logger, url string, o options) (*dataSet, error) {
	pool, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	key := fmt.Sprintf("%d/%d", o.companies, o.accounts)
	d := plan(o.accounts, o.companies)
	var stored string
	err = pool.GetContext(ctx, &stored, `SELECT key FROM bench_meta`)
	if err == nil && stored == key {
		// Migrations added since the data set was made apply to it like to any database.
		if _, err := db.Migrate(ctx, pool); err != nil {
			return nil, fmt.Errorf("migrate the data set (run with -regenerate to start again): %w", err)
		}
		// cross-account: the benchmark finds the accounts it generated by name.
		if err := pool.SelectContext(ctx, &d.Accounts, `SELECT id FROM accounts WHERE name LIKE 'Bench %' ORDER BY id`); err != nil {
			return nil, err
		}
		// Earlier runs inserted counterparties into the big account; vacuum so
		// that every run starts with index-only scans of all-visible pages.
		// cross-account: maintenance of whole tables, in the benchmark's own database.
		if _, err := pool.ExecContext(ctx, `VACUUM ANALYZE companies, emails, phones, journal, list_counts`); err != nil {
			return nil, err
		}
		log.Info("reusing the generated data set", "key", key)
		return &d, nil
	}
	// No data set, or one of another size: start from an empty database (a new
	// one needs nothing dropped; on Citus, compareCitus makes it new).
	var used bool
	if err := pool.GetContext(ctx, &used, `SELECT to_regclass('public.companies') IS NOT NULL`); err != nil {
		return nil, err
	}
	if used {
		if _, err := pool.ExecContext(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
			return nil, err
		}
	}
	if _, err := db.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	start := time.Now()
	log.Info("generating the data set", "companies", o.companies, "accounts", o.accounts)
	if err := generate(ctx, pool, log, &d, o); err != nil {
		return nil, err
	}
	if _, err := pool.ExecContext(ctx, `CREATE TABLE bench_meta (key text NOT NULL)`); err != nil {
		return nil, err
	}
	if _, err := pool.ExecContext(ctx, `INSERT INTO bench_meta VALUES ($1)`, key); err != nil {
		return nil, err
	}
	// On Citus every table must be distributed before a server serves the
	// database: bench_meta becomes a reference table.
	if _, err := db.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	log.Info("generated", "took", time.Since(start).Round(time.Second))
	return &d, nil
}

// side is the server under test over one database, with the direct
// connections of the SQL side.
type side struct {
	env                   *benchEnv
	rec                   *recorder
	limited               *benchEnv // env, served with MAX_IN_FLIGHT (inFlightLimit)
	direct, directGeneric *sql.DB
	closers               []func() error
}

// openSide serves the API over the database at url on a loopback port, as
// crm-server serve would (a pool of custom plans and one of generic plans),
// with every statement recorded when rec is on.
func openSide(ctx context.Context, url string, data *dataSet) (_ *side, err error) {
	sd := &side{rec: &recorder{}}
	defer func() {
		if err != nil {
			sd.close()
		}
	}()
	traced, err := openTracing(url, sd.rec, false)
	if err != nil {
		return nil, err
	}
	sd.closers = append(sd.closers, traced.Close)
	traced.SetMaxOpenConns(32)
	traced.SetMaxIdleConns(32)
	pool := sqlx.NewDb(traced, "postgres")
	// As db.OpenGeneric: sessions of generic plans, but ordinary ones on Citus.
	genericURL := url
	if citus, err := db.IsCitus(ctx, pool); err != nil {
		return nil, err
	} else if !citus {
		if genericURL, err = withParam(url, "plan_cache_mode", "force_generic_plan"); err != nil {
			return nil, err
		}
	}
	tracedGeneric, err := openTracing(genericURL, sd.rec, true)
	if err != nil {
		return nil, err
	}
	sd.closers = append(sd.closers, tracedGeneric.Close)
	tracedGeneric.SetMaxOpenConns(16)
	tracedGeneric.SetMaxIdleConns(16)
	// The same server twice over the same pools: as deployed by default, and
	// with MAX_IN_FLIGHT at the cores plus one, as on a machine that hosts
	// its PostgreSQL (the scenarios marked limited).
	serve := func(maxInFlight int) (string, error) {
		handler, err := impl.NewHandler(impl.Config{DB: pool, GenericDB: sqlx.NewDb(tracedGeneric, "postgres"), MaxInFlight: maxInFlight,
			Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
		if err != nil {
			return "", err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		sd.closers = append(sd.closers, srv.Close)
		return "http://" + ln.Addr().String(), nil
	}
	base, err := serve(0)
	if err != nil {
		return nil, err
	}
	limitedBase, err := serve(inFlightLimit())
	if err != nil {
		return nil, err
	}

	// The direct side has the same two kinds of sessions as the server.
	if sd.direct, err = sql.Open("postgres", url); err != nil {
		return nil, err
	}
	sd.closers = append(sd.closers, sd.direct.Close)
	if sd.directGeneric, err = sql.Open("postgres", genericURL); err != nil {
		return nil, err
	}
	sd.closers = append(sd.closers, sd.directGeneric.Close)

	if sd.env, err = newBenchEnv(ctx, pool, data, base); err != nil {
		return nil, err
	}
	// The token lookup as the server runs it (the first request of a token
	// pays it), for the scenarios that compare with it (lookupBaseline).
	sd.rec.start()
	_, _, err = sd.env.call(ctx, http.MethodGet, fmt.Sprintf("/company/get?id=%d", sd.env.firstCo), nil)
	for _, st := range sd.rec.stop() {
		if isTokenLookup(st) {
			sd.env.lookup = &st
		}
	}
	if err != nil {
		return nil, err
	}
	limited := *sd.env
	limited.base = limitedBase
	sd.limited = &limited
	return sd, nil
}

// inFlightLimit is the MAX_IN_FLIGHT of the limited scenarios: the cores plus one.
func inFlightLimit() int { return runtime.GOMAXPROCS(0) + 1 }

// close stops the server and closes the connections, once.
func (sd *side) close() {
	for i := len(sd.closers) - 1; i >= 0; i-- {
		sd.closers[i]()
	}
	sd.closers = nil
}

// runScenarios measures each scenario, printing a line for each, and drives
// those marked for it with wrk when withWrk.
func (sd *side) runScenarios(ctx context.Context, log *slog.Logger, list []scenario, o options, withWrk bool) ([]result, error) {
	var results []result
	eta := startETA(log, o.progressEvery, len(list), 5*(o.warmup+o.duration))
	defer eta.stop()
	for i, sc := range list {
		eta.begin(i, sc.name)
		env := sd.env
		if sc.limited {
			env = sd.limited
		}
		res, err := measure(ctx, env, sc, sd.rec, sd.direct, sd.directGeneric, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.name, err)
		}
		if sc.wrk && withWrk && !o.explain {
			rss := sampleRSS(100 * time.Millisecond)
			res.wrk = runWrk(ctx, env, sc, o)
			res.wrk.rssMax = rss.stop()
		}
		results = append(results, res)
		fmt.Println(res.line())
	}
	return results, nil
}

// removeEarlierInserts takes out of the data set at url what earlier runs of
// the insert scenario wrote (removeInserted).
func removeEarlierInserts(ctx context.Context, log *slog.Logger, url string, data *dataSet) error {
	pool, err := db.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := removeInserted(ctx, pool, data.Accounts[0])
	if n > 0 {
		log.Info("removed the counterparties earlier runs inserted", "counterparties", n)
	}
	if err != nil {
		return fmt.Errorf("remove what earlier runs inserted: %w", err)
	}
	return nil
}
