package main

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/impl"
)

// benchEnv is what the scenarios need to know about the big account.
type benchEnv struct {
	pool               *sqlx.DB
	account            int64
	lookup             *statement // the token lookup, as the server runs it
	base               string
	token              string
	client             *http.Client
	firstCo, lastCo    int64
	typeID, userID     int64
	weekFrom, weekTo   string
	monthFrom, monthTo string
}

func newBenchEnv(ctx context.Context, pool *sqlx.DB, data *dataSet, base string) (*benchEnv, error) {
	acc := data.Accounts[0]
	e := &benchEnv{pool: pool, account: acc, base: base, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}}
	err := pool.GetContext(ctx, &e.userID, `SELECT id FROM users WHERE account_id = $1 AND role = 'admin' ORDER BY id LIMIT 1`, acc)
	if err != nil {
		return nil, fmt.Errorf("the big account's admin: %w", err)
	}
	if err := pool.QueryRowxContext(ctx, `SELECT min(id), max(id) FROM companies WHERE account_id = $1 AND created_via = 'import'`, acc).
		Scan(&e.firstCo, &e.lastCo); err != nil {
		return nil, err
	}
	if err := pool.GetContext(ctx, &e.typeID, `SELECT min(id) FROM directory_values WHERE account_id = $1 AND directory_code = 9`, acc); err != nil {
		return nil, err
	}
	if _, e.token, err = impl.CreateToken(ctx, pool, e.userID, "crm-bench", time.Hour); err != nil {
		return nil, err
	}
	now := time.Now()
	e.weekFrom, e.weekTo = now.AddDate(0, 0, -30).Format("2006-01-02"), now.AddDate(0, 0, -24).Format("2006-01-02")
	e.monthFrom, e.monthTo = now.AddDate(0, -2, 0).Format("2006-01-02"), now.AddDate(0, -1, 0).Format("2006-01-02")
	return e, nil
}

// scenario is one kind of request; next makes the request of one iteration.
type scenario struct {
	name   string
	goal   time.Duration // median target over HTTP, 0: none
	minRPS float64       // throughput target, 0: none
	next   func(rng *rand.Rand) (method, target string, body []byte)

	// fresh: each request writes new rows named by a marker (newMarker) in its
	// text; the SQL side and wrk replace the marker of the sample they replay,
	// so that every side does the same work, and stored counts what each side
	// stored (see countStored).
	fresh  bool
	stored string
	// lookupBaseline: the SQL side also replays the token lookup before the
	// statements, as every request ran them before the token cache (issue 15).
	lookupBaseline bool
	// wrk: also driven by wrk, when installed (wrk.go).
	wrk bool
	// limited: served with MAX_IN_FLIGHT at the cores plus one (impl/inflight.go).
	limited bool
}

// A marker names the rows of one request of a fresh scenario: the side's
// letter (h: HTTP, s: SQL, w: wrk) and 16 hexadecimal digits.
var markerPattern = regexp.MustCompile(`\b[hsw][0-9a-f]{16}\b`)

func newMarker(side byte, rng *rand.Rand) string { return fmt.Sprintf("%c%016x", side, rng.Uint64()) }

func list(module int, query string) func(*rand.Rand) (string, string, []byte) {
	return func(*rand.Rand) (string, string, []byte) {
		return http.MethodPost, fmt.Sprintf("/common/list/paging/%d?%s", module, query), nil
	}
}

func scenarios(e *benchEnv) []scenario {
	const cols = "columns=id,name,city,user_name,created"
	company := func(rng *rand.Rand) int64 { return e.firstCo + rng.Int64N(e.lastCo-e.firstCo+1) }
	return []scenario{
		{name: "first page of 50 counterparties, exact total", goal: 5 * time.Millisecond, minRPS: 1000,
			next: list(1, cols+"&records_onpage=50")},
		{name: "same, rare name substring (0.3 % of the account)", goal: 20 * time.Millisecond,
			next: list(1, cols+"&records_onpage=50&name=zephyr")},
		{name: "same, frequent name substring (3.3 %)",
			next: list(1, cols+"&records_onpage=50&name=nordic")},
		{name: "same, e-mail filter", goal: 3 * time.Millisecond, next: func(rng *rand.Rand) (string, string, []byte) {
			id := company(rng)
			return http.MethodPost, fmt.Sprintf("/common/list/paging/1?%s&email=info%d@company%d.example", cols, id, id), nil
		}},
		{name: "same, phone filter (last 8 digits)", goal: 3 * time.Millisecond, next: func(rng *rand.Rand) (string, string, []byte) {
			return http.MethodPost, fmt.Sprintf("/common/list/paging/1?%s&phone=2%07d", cols, company(rng)%10_000_000), nil
		}},
		{name: "page 100 of 50 counterparties", goal: 10 * time.Millisecond, next: list(1, cols+"&records_onpage=50&page=100")},
		{name: "a page of 500 counterparties", goal: 15 * time.Millisecond, next: list(1, cols+"&records_onpage=500")},
		{name: "tasks of a week (date range)", next: list(2, "columns=id,note,status,date_start,user_name,company_name&records_onpage=50&date1="+e.weekFrom+"&date2="+e.weekTo)},
		{name: "deals of a month (date range)", next: list(20, "columns=id,name,sum,status,company_name,user_name&records_onpage=50&date1="+e.monthFrom+"&date2="+e.monthTo)},
		{name: "counterparty card", lookupBaseline: true, wrk: true, next: func(rng *rand.Rand) (string, string, []byte) {
			return http.MethodGet, fmt.Sprintf("/company/get?id=%d", company(rng)), nil
		}},
		{name: fmt.Sprintf("counterparty card, MAX_IN_FLIGHT=%d", inFlightLimit()), lookupBaseline: true, wrk: true, limited: true,
			next: func(rng *rand.Rand) (string, string, []byte) {
				return http.MethodGet, fmt.Sprintf("/company/get?id=%d", company(rng)), nil
			}},
		{name: "counterparty insert, 2 e-mails and 2 phones, duplicate check", fresh: true, wrk: true,
			stored: insertedName + "%", next: func(rng *rand.Rand) (string, string, []byte) {
				m := newMarker('h', rng)
				body, _ := json.Marshal(map[string]any{"name": insertedName + m, "type_id": e.typeID, "user_id": e.userID,
					"Emails": []any{map[string]any{"email": "a." + m + "@new.example"}, map[string]any{"email": "b." + m + "@new.example"}},
					"Phones": []any{map[string]any{"phone": fmt.Sprintf("+371 2%07d", rng.IntN(10_000_000))}, map[string]any{"phone": "+372 5000 0000"}}})
				return http.MethodPost, "/company/insert?check_duplicates=true", body
			}},
	}
}

// result is what one scenario measured: latency with one client, throughput
// (and latency under it) with o.clients, over HTTP and as direct SQL.
type result struct {
	scenario
	clients           int
	http, sql         stats
	httpLoad, sqlLoad stats // with o.clients
	httpRPS, sqlRPS   float64
	errors            int
	statements        int
	sampleBytes       int

	baseline    stats    // lookupBaseline: the SQL side with the token lookup, o.clients
	baselineRPS float64  //
	storedHTTP  [3]int64 // fresh: what each side stored: counterparties, e-mails, phones
	storedSQL   [3]int64
	rssMax      int64 // the largest VmRSS of the process during the HTTP phases, bytes
	wrk         *wrkResult
}

type stats struct {
	n             int
	p50, p95, p99 time.Duration
}

func summarize(lat []time.Duration) stats {
	slices.Sort(lat)
	at := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(q*float64(len(lat))))]
	}
	return stats{n: len(lat), p50: at(0.50), p95: at(0.95), p99: at(0.99)}
}

// worker makes one request (or replays one) per call.
type worker func(ctx context.Context, rng *rand.Rand) error

// measure runs a scenario over HTTP, one client for latency and o.clients for
// throughput, then replays the statements of sample requests directly the same
// two ways.
func measure(ctx context.Context, e *benchEnv, sc scenario, rec *recorder, direct, directGeneric *sql.DB, o options) (result, error) {
	res := result{scenario: sc, clients: o.clients}
	// Samples: a few requests one at a time, each with its statements recorded.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var traces [][]statement
	for range 20 {
		method, target, body := sc.next(rng)
		rec.start()
		n, _, err := e.call(ctx, method, target, body)
		trace := rec.stop()
		if err != nil {
			return res, err
		}
		res.sampleBytes, res.statements = n, len(trace)
		traces = append(traces, trace)
	}
	if o.explain {
		trace := traces[0]
		if sc.fresh { // the sample's rows exist: its e-mails would make this one a duplicate
			trace = withMarker(trace, newMarker('s', rng))
		}
		return res, explain(ctx, direct, sc.name, trace)
	}

	overHTTP := func() (worker, func(), error) {
		return func(ctx context.Context, rng *rand.Rand) error {
			method, target, body := sc.next(rng)
			_, _, err := e.call(ctx, method, target, body)
			return err
		}, func() {}, nil
	}
	replaying := func(traces [][]statement) func() (worker, func(), error) {
		return func() (worker, func(), error) {
			r, err := newReplayer(ctx, direct, directGeneric)
			if err != nil {
				return nil, nil, err
			}
			return func(ctx context.Context, rng *rand.Rand) error {
				trace := traces[rng.IntN(len(traces))]
				if sc.fresh {
					trace = withMarker(trace, newMarker('s', rng))
				}
				return r.replay(ctx, trace)
			}, r.close, nil
		}
	}
	asSQL := replaying(traces)
	type phase struct {
		side    func() (worker, func(), error)
		clients int
		lat     *stats
		rps     *float64
	}
	phases := []phase{
		{overHTTP, 1, &res.http, nil}, {overHTTP, o.clients, &res.httpLoad, &res.httpRPS},
		{asSQL, 1, &res.sql, nil}, {asSQL, o.clients, &res.sqlLoad, &res.sqlRPS},
	}
	if sc.lookupBaseline && e.lookup != nil {
		var withLookup [][]statement
		for _, tr := range traces {
			withLookup = append(withLookup, append([]statement{*e.lookup}, withoutLookup(tr)...))
		}
		phases = append(phases, phase{replaying(withLookup), o.clients, &res.baseline, &res.baselineRPS})
	}
	var before counts
	if sc.stored != "" {
		var err error
		if before, err = e.countStored(ctx, sc.stored); err != nil {
			return res, err
		}
	}
	for i, ph := range phases {
		var rss *rssSampler
		if i < 2 {
			rss = sampleRSS(100 * time.Millisecond)
		}
		stopProfile, err := profile(o, i == 1, sc.name)
		if err != nil {
			return res, err
		}
		lat, errs, err := load(ctx, ph.clients, o, ph.side)
		stopProfile()
		if rss != nil {
			res.rssMax = max(res.rssMax, rss.stop())
		}
		if err != nil {
			return res, err
		}
		res.errors += errs
		*ph.lat = summarize(lat)
		if ph.rps != nil {
			*ph.rps = float64(len(lat)) / o.duration.Seconds()
		}
	}
	if sc.stored != "" {
		after, err := e.countStored(ctx, sc.stored)
		if err != nil {
			return res, err
		}
		res.storedHTTP, res.storedSQL = after.minus(before, 'h'), after.minus(before, 's')
	}
	return res, nil
}

// profile starts a CPU profile of the process (the server and the clients)
// into o.profile when on, and returns what stops it.
func profile(o options, on bool, name string) (func(), error) {
	if o.profile == "" || !on {
		return func() {}, nil
	}
	if err := os.MkdirAll(o.profile, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(o.profile, strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// withMarker returns a copy of a recorded request whose arguments name the
// rows by the marker m instead of the sample's.
func withMarker(trace []statement, m string) []statement {
	out := make([]statement, len(trace))
	for i, st := range trace {
		out[i] = st
		out[i].args = make([]driver.NamedValue, len(st.args))
		for j, a := range st.args {
			switch v := a.Value.(type) {
			case string:
				a.Value = markerPattern.ReplaceAllLiteralString(v, m)
			case []byte:
				a.Value = markerPattern.ReplaceAll(v, []byte(m))
			}
			out[i].args[j] = a
		}
	}
	return out
}

// withoutLookup is a recorded request without its token lookup (if it had one).
func withoutLookup(trace []statement) []statement {
	var out []statement
	for _, st := range trace {
		if !isTokenLookup(st) {
			out = append(out, st)
		}
	}
	return out
}

func isTokenLookup(st statement) bool { return strings.Contains(st.query, "FROM tokens") }

// counts are the rows of a fresh scenario by side: counterparties, their
// e-mails and phones.
type counts map[byte][3]int64

func (c counts) minus(before counts, side byte) [3]int64 {
	a, b := c[side], before[side]
	return [3]int64{a[0] - b[0], a[1] - b[1], a[2] - b[2]}
}

// countStored counts the counterparties of the big account named like
// pattern followed by a marker, with their e-mails and phones, by side.
func (e *benchEnv) countStored(ctx context.Context, pattern string) (counts, error) {
	rows, err := e.pool.QueryContext(ctx, `
		SELECT substr(c.name, length($2), 1), count(*),
		       sum((SELECT count(*) FROM emails m WHERE m.account_id = $1 AND m.company_id = c.id)),
		       sum((SELECT count(*) FROM phones p WHERE p.account_id = $1 AND p.company_id = c.id))
		  FROM companies c WHERE c.account_id = $1 AND c.name LIKE $2
		 GROUP BY 1`, e.account, pattern)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := counts{}
	for rows.Next() {
		var side string
		var n [3]int64
		if err := rows.Scan(&side, &n[0], &n[1], &n[2]); err != nil {
			return nil, err
		}
		if side != "" {
			out[side[0]] = n
		}
	}
	return out, rows.Err()
}

// load runs clients workers for the warm-up and then o.duration, returning the
// latencies measured after the warm-up and how many calls failed.
func load(ctx context.Context, clients int, o options, newWorker func() (worker, func(), error)) ([]time.Duration, int, error) {
	workers := make([]worker, clients)
	for i := range workers {
		w, done, err := newWorker()
		if err != nil {
			return nil, 0, err
		}
		defer done()
		workers[i] = w
	}
	var mu sync.Mutex
	var all []time.Duration
	errs := 0
	start := time.Now()
	measureFrom, end := start.Add(o.warmup), start.Add(o.warmup+o.duration)
	var wg sync.WaitGroup
	for c, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			var lat []time.Duration
			bad := 0
			for ctx.Err() == nil {
				t := time.Now()
				if t.After(end) {
					break
				}
				err := w(ctx, rng)
				if t.After(measureFrom) {
					lat = append(lat, time.Since(t))
					if err != nil {
						bad++
					}
				}
			}
			mu.Lock()
			all, errs = append(all, lat...), errs+bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, errs, ctx.Err()
}

// call sends one request and checks that it succeeded.
func (e *benchEnv) call(ctx context.Context, method, target string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.base+target, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	// A buffer of an earlier reply: lib/pq on the SQL side reads into a
	// buffer it keeps too, so neither side pays for growing one per reply.
	buf := replyBuffers.Get().(*bytes.Buffer)
	defer replyBuffers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, "", err
	}
	data := buf.Bytes()
	status, err := envelopeStatus(data)
	if err != nil || status != "success" {
		return len(data), "", fmt.Errorf("%s %s: %s", method, target, data)
	}
	return len(data), status, nil
}

var replyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// envelopeStatus reads the member status of the envelope in data, token by
// token, and stops there: the value (up to 760 kB of escaped JSON text on the
// card of 1,000 contact persons) is received but not decoded, as the SQL side
// receives the same text from PostgreSQL without decoding it. Decoding it
// cost the client, in the same process and on the same cores as the server,
// up to a few milliseconds that the report counted as the server's share.
func envelopeStatus(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key == "status" {
			var status string
			if err := dec.Decode(&status); err != nil {
				return "", err
			}
			return status, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no status")
}

func (r result) line() string {
	l := fmt.Sprintf("%-62s http p50 %7s p99 %7s | %d clients p50 %7s p99 %7s %6.0f/s | sql p50 %7s %6.0f/s | errors %d",
		r.name, ms(r.http.p50), ms(r.http.p99), r.clients, ms(r.httpLoad.p50), ms(r.httpLoad.p99), r.httpRPS, ms(r.sql.p50), r.sqlRPS, r.errors)
	if r.baselineRPS > 0 {
		l += fmt.Sprintf(" | sql with the token lookup %.0f/s", r.baselineRPS)
	}
	if r.wrk != nil && r.wrk.skipped == "" {
		l += fmt.Sprintf(" | wrk %.0f/s p50 %s p99 %s", r.wrk.rps, ms(r.wrk.p50), ms(r.wrk.p99))
	}
	return l
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// machineInfo describes where the run happened.
type machineInfo struct {
	cpu, memory, goVersion, postgres, loadBefore string
	cores                                        int
}

func machine(ctx context.Context, pool *sqlx.DB) machineInfo {
	m := machineInfo{cores: runtime.NumCPU(), goVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				m.cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memory = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.loadBefore = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	_ = pool.GetContext(ctx, &m.postgres, `SHOW server_version`)
	return m
}

func renderReport(d *dataSet, o options, results []result, m machineInfo, base *baselineResult) string {
	var b strings.Builder
	total := func(v []int) (n int) {
		for _, x := range v {
			n += x
		}
		return n
	}
	fmt.Fprintf(&b, "## Universal list and hot paths (`go run ./cmd/crm-bench`)\n\n")
	fmt.Fprintf(&b, "Run on %s: %d cores (%s), %s memory, %s, PostgreSQL %s, load average before the run %s. "+
		"The machine is shared: compare figures within one run, not across runs.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), m.cores, m.cpu, m.memory, m.goVersion, m.postgres, m.loadBefore)
	fmt.Fprintf(&b, "Data: %d counterparties over %d accounts, the big account holding %d, each with two e-mails and two phones; "+
		"%d tasks, %d deals, %d documents, %d money movements (the big account: %d, %d, %d, %d). "+
		"Every request is made by the big account's admin, who sees all of it. Latencies are measured with one client and "+
		"under the load of %d concurrent clients, throughput (req/s) with the %d clients; %s per measurement after %s of warm-up.\n\n",
		total(d.Companies), len(d.Companies), d.Companies[0], total(d.Tasks), total(d.Deals), total(d.Documents), total(d.Movements),
		d.Tasks[0], d.Deals[0], d.Documents[0], d.Movements[0], o.clients, o.clients, o.duration, o.warmup)
	b.WriteString("**HTTP** is the whole request through the server on loopback (authentication, validation, SQL, JSON; " +
		"the client asks for no compression, as wrk and the SQL side do not either); " +
		"**SQL** replays the very statements the server ran for sample requests directly with lib/pq (prepared where the " +
		"server prepares them; the token lookup only where the server ran it, which with the token cache is about once a " +
		"second). **Server share** = HTTP p50 − SQL p50: what the server adds to PostgreSQL's time (HTTP, authentication, " +
		"validation, JSON). The HTTP client reads the whole reply but decodes only the envelope's status, as the SQL side " +
		"receives the value's text without decoding it.\n\n")
	fmt.Fprintf(&b, "| scenario | HTTP p50 | p99 | %d clients: p50 | p99 | req/s | SQL p50 | SQL p99 | SQL req/s | HTTP/SQL (p50) | server share (p50) | statements | reply bytes | target | errors |\n", o.clients)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	var tails []string
	for _, r := range results {
		ratio := 0.0
		if r.sql.p50 > 0 {
			ratio = float64(r.http.p50) / float64(r.sql.p50)
		}
		target := ""
		if r.goal > 0 {
			verdict := "met"
			if r.http.p50 > r.goal {
				verdict = "MISSED"
			}
			target = fmt.Sprintf("p50 < %s ms: %s", ms(r.goal), verdict)
		}
		if r.minRPS > 0 {
			verdict := "met"
			if r.httpRPS < r.minRPS {
				verdict = "MISSED"
			}
			target += fmt.Sprintf("; ≥ %.0f req/s: %s", r.minRPS, verdict)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f | %s | %s | %.0f | %.1f | %s | %d | %d | %s | %d |\n",
			r.name, ms(r.http.p50), ms(r.http.p99), ms(r.httpLoad.p50), ms(r.httpLoad.p99), r.httpRPS, ms(r.sql.p50), ms(r.sql.p99), r.sqlRPS, ratio,
			ms(r.http.p50-r.sql.p50), r.statements, r.sampleBytes, strings.TrimPrefix(target, "; "), r.errors)
		for _, t := range []struct {
			what     string
			p50, p99 time.Duration
		}{{"one client", r.http.p50, r.http.p99}, {fmt.Sprintf("%d clients", o.clients), r.httpLoad.p50, r.httpLoad.p99}} {
			if t.p50 > 0 && t.p99 > 3*t.p50 {
				tails = append(tails, fmt.Sprintf("%s, %s (%.1f×)", r.name, t.what, float64(t.p99)/float64(t.p50)))
			}
		}
	}
	b.WriteString("\n(milliseconds)\n\n")
	if len(tails) > 0 {
		b.WriteString("p99 above 3× p50 over HTTP (explained below the report): " + strings.Join(tails, "; ") + ".\n\n")
	} else {
		b.WriteString("No scenario's p99 over HTTP is above 3× its p50.\n\n")
	}

	for _, r := range results {
		if r.lookupBaseline && r.baselineRPS > 0 {
			fmt.Fprintf(&b, "**%s against PostgreSQL running the statements of a request before the token cache** (the token lookup "+
				"and the card, prepared, %d clients): the server %.0f req/s (p50 %s, p99 %s ms, p99/p50 %.1f), PostgreSQL alone %.0f req/s "+
				"(p50 %s, p99 %s ms): **%.2f×**.\n\n",
				upperFirst(r.name), o.clients, r.httpRPS, ms(r.httpLoad.p50), ms(r.httpLoad.p99), safeRatio(r.httpLoad.p99, r.httpLoad.p50),
				r.baselineRPS, ms(r.baseline.p50), ms(r.baseline.p99), r.httpRPS/r.baselineRPS)
			if r.wrk != nil && r.wrk.skipped == "" {
				fmt.Fprintf(&b, "Driven by wrk from outside the process instead: %.0f req/s (p50 %s, p99 %s ms, p99/p50 %.1f): **%.2f×** of PostgreSQL alone.\n\n",
					r.wrk.rps, ms(r.wrk.p50), ms(r.wrk.p99), safeRatio(r.wrk.p99, r.wrk.p50), r.wrk.rps/r.baselineRPS)
			}
		}
		if r.stored != "" {
			check := func(c [3]int64) string {
				if c[0] > 0 && c[1] == 2*c[0] && c[2] == 2*c[0] {
					return "each with 2 e-mails and 2 phones"
				}
				return "NOT each with 2 e-mails and 2 phones"
			}
			fmt.Fprintf(&b, "**%s: what each side stored** (counted in the database): over HTTP %d counterparties, %d e-mails, %d phones (%s); "+
				"the SQL side %d counterparties, %d e-mails, %d phones (%s).\n\n", upperFirst(r.name),
				r.storedHTTP[0], r.storedHTTP[1], r.storedHTTP[2], check(r.storedHTTP), r.storedSQL[0], r.storedSQL[1], r.storedSQL[2], check(r.storedSQL))
			if r.wrk != nil && r.wrk.skipped == "" {
				fmt.Fprintf(&b, "wrk's measured run made %d requests and stored %d counterparties, %d e-mails, %d phones (%s).\n\n",
					r.wrk.requests, r.wrk.stored[0], r.wrk.stored[1], r.wrk.stored[2], check(r.wrk.stored))
			}
		}
	}

	var rss, rssWrk int64
	wrote := false
	for _, r := range results {
		rss = max(rss, r.rssMax)
		if r.wrk == nil {
			continue
		}
		rssWrk = max(rssWrk, r.wrk.rssMax)
		if !wrote {
			fmt.Fprintf(&b, "**wrk** (an outside load generator: `wrk -t 2 -c %d --latency`, the scenario's sample requests in turn) "+
				"beside the built-in client with %d clients:\n\n", o.clients, o.clients)
			b.WriteString("| scenario | wrk req/s | wrk p50 | wrk p99 | built-in req/s | built-in p50 | built-in p99 | wrk errors |\n")
			b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
			wrote = true
		}
		if r.wrk.skipped != "" {
			fmt.Fprintf(&b, "| %s | skipped: %s | | | %.0f | %s | %s | 0 |\n", r.name, r.wrk.skipped, r.httpRPS, ms(r.httpLoad.p50), ms(r.httpLoad.p99))
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f | %s | %s | %d |\n", r.name, r.wrk.rps, ms(r.wrk.p50), ms(r.wrk.p99),
			r.httpRPS, ms(r.httpLoad.p50), ms(r.httpLoad.p99), r.wrk.errors)
	}
	if wrote {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "**Memory:** the server runs inside the benchmark's process; its resident memory (VmRSS of /proc/self/status, "+
		"sampled every 100 ms) peaked at **%.0f MB** while the built-in clients ran (the clients and the SQL replay included)", float64(rss)/(1<<20))
	if rssWrk > 0 {
		fmt.Fprintf(&b, " and at **%.0f MB** while wrk drove it from outside (the server alone at work)", float64(rssWrk)/(1<<20))
	}
	b.WriteString("; the limit is 150 MB.\n\n")
	if base != nil {
		b.WriteString(base.render())
	}
	return b.String()
}

func safeRatio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

const (
	sectionBegin = "<!-- crm-bench:begin -->"
	sectionEnd   = "<!-- crm-bench:end -->"
)

// writeSection replaces the report's section in the file, keeping the rest.
func writeSection(path, report string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	if text == "" {
		text = "# Benchmarks\n\nMeasured with `make bench`. Figures are medians and ratios of one run on a shared machine.\n\n"
	}
	section := sectionBegin + "\n" + report + sectionEnd
	if i, j := strings.Index(text, sectionBegin), strings.Index(text, sectionEnd); i >= 0 && j > i {
		text = text[:i] + section + text[j+len(sectionEnd):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// writeNamedSection replaces, in the report at path, the part between the
// markers of name (added at the end when missing) with text: the Citus
// comparison run alone (-scaleout-only) keeps the rest of the report.
func writeNamedSection(path, name, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	begin, end := "<!-- bench:"+name+" begin -->", "<!-- bench:"+name+" end -->"
	doc := string(old)
	section := begin + "\n" + text + "\n" + end
	if i, j := strings.Index(doc, begin), strings.Index(doc, end); i >= 0 && j > i {
		doc = doc[:i] + section + doc[j+len(end):]
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section + "\n"
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// explain prints the plan of each statement of a trace but the token lookup.
func explain(ctx context.Context, db *sql.DB, name string, trace []statement) error {
	fmt.Printf("\n### %s\n", name)
	for _, st := range trace {
		if strings.Contains(st.query, "FROM tokens") || st.query == "BEGIN" || st.query == "COMMIT" || st.query == "ROLLBACK" ||
			!strings.Contains(strings.ToUpper(st.query), "SELECT") {
			continue
		}
		args := make([]any, len(st.args))
		for i, a := range st.args {
			args[i] = a.Value
		}
		rows, err := db.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+st.query, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			fmt.Println(line)
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// insertedName begins the name of every counterparty the insert scenario
// writes (followed by the request's marker).
const insertedName = "Bench insert "

// removeInserted deletes the counterparties that earlier runs of the insert
// scenario left in the big account, with their e-mails and phones (the row
// triggers take them out of the counts, names and KPI rollups; the journal
// keeps its rows, as for any deletion), and vacuums the tables they were in,
// so that every run measures the data set as generated: each run adds some
// 20,000 of them. It deletes 1,000 per transaction: in one transaction every
// deletion would update the account's counter rows again, each update walking
// the chain of versions the earlier ones left (129,000 took 9 minutes so). It
// returns how many it removed.
func removeInserted(ctx context.Context, pool *sqlx.DB, account int64) (int64, error) {
	var removed int64
	for {
		n, err := removeInsertedBatch(ctx, pool, account, removeBatch)
		removed += n
		if err != nil {
			return removed, err
		}
		if n == 0 {
			break
		}
	}
	if removed == 0 {
		return 0, nil
	}
	for _, table := range []string{"companies", "company_names", "emails", "phones"} {
		if _, err := pool.ExecContext(ctx, `VACUUM (ANALYZE) `+table); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// removeBatch is how many inserted counterparties removeInserted deletes per
// transaction (a test makes it small).
var removeBatch = 1000

// removeInsertedBatch deletes up to limit of the inserted counterparties, in
// one transaction.
func removeInsertedBatch(ctx context.Context, pool *sqlx.DB, account int64, limit int) (int64, error) {
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var ids []int64
	if err := tx.SelectContext(ctx, &ids, `SELECT id FROM companies WHERE account_id = $1 AND name LIKE $2 ORDER BY id LIMIT $3`,
		account, insertedName+"%", limit); err != nil || len(ids) == 0 {
		return 0, err
	}
	for _, stmt := range []string{
		`DELETE FROM emails WHERE account_id = $1 AND company_id = ANY ($2)`,
		`DELETE FROM phones WHERE account_id = $1 AND company_id = ANY ($2)`,
		`DELETE FROM companies WHERE account_id = $1 AND id = ANY ($2)`,
	} {
		if _, err := tx.ExecContext(ctx, stmt, account, pq.Array(ids)); err != nil {
			return 0, err
		}
	}
	return int64(len(ids)), tx.Commit()
}
