// Command crm-memload measures the memory a crm-server process needs under
// large and hostile requests: it builds crm-server and, for each scenario,
// starts a real process of it on a database of its own (crm_memload on the
// server of DATABASE_URL, or of the private cluster under ./.data, made anew
// each run with the demo account), sends the scenario's requests, samples the
// process's resident memory from /proc/PID/status (VmRSS, and VmHWM, the
// peak), and writes the results into their section of docs/benchmarks.md.
// The scenarios:
//
//   - mail: concurrent POST /mail/send of about 9.5 MiB each (-clients, -size);
//     the peak must stay under 500 MiB;
//
//   - nested: 40 concurrent POST /company/update of 1 MiB of nested arrays from
//     one member's token under the default limits; the peak must stay under
//     200 MiB;
//
//   - wide: the same with 1 MiB bodies of one array of zeros, within the
//     nesting bound; the peak must stay under 200 MiB;
//
//   - nested-insert and values-insert: 40 concurrent POST /company/insert,
//     whose schema allows many values, nested past the bound in one member,
//     and with as many values as the schema allows; the peak must stay under
//     200 MiB;
//
//   - nested-10: one POST /mail/send of 10 MiB of nested arrays; it must cost
//     (peak less idle) less than twice its size.
//
//     go run ./cmd/crm-memload [-clients 20] [-size 9.5] [-large-requests 4] [-gomemlimit 256MiB] [-report docs/benchmarks.md]
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, log, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "crm-memload:", err)
		os.Exit(1)
	}
}

type options struct {
	clients       int
	sizeMiB       float64
	largeRequests string
	goMemLimit    string
	report        string
}

// scenario is one load against a fresh server process, and its goal.
type scenario struct {
	name    string // as the report names it
	what    string // the requests, for the report
	env     []string
	send    func(ctx context.Context, base string) map[string]int // the replies by kind
	goal    string
	met     func(idle, peak int64) bool
	after5s bool // report the resident memory 5 s after the load, too
}

// result is what a scenario measured.
type result struct {
	scenario
	idle, peak, after int64
	replies           map[string]int
	elapsed           time.Duration
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	var o options
	fs := flag.NewFlagSet("crm-memload", flag.ContinueOnError)
	fs.IntVar(&o.clients, "clients", 20, "concurrent POST /mail/send of the mail scenario")
	fs.Float64Var(&o.sizeMiB, "size", 9.5, "size of each request body of the mail scenario in MiB (at most 10)")
	fs.StringVar(&o.largeRequests, "large-requests", "", "LARGE_REQUESTS of the server (empty: its default)")
	fs.StringVar(&o.goMemLimit, "gomemlimit", "", "GOMEMLIMIT of the server (empty: none, its default)")
	fs.StringVar(&o.report, "report", "docs/benchmarks.md", "the report to write the result into (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if runtime.GOOS != "linux" {
		fmt.Println("crm-memload: skipped: it reads /proc/PID/status, which only Linux has")
		return nil
	}
	dbURL, err := freshDatabase(ctx, log)
	if err != nil {
		return err
	}
	pool, err := db.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	if _, err := db.Migrate(ctx, pool); err != nil {
		pool.Close()
		return err
	}
	d, err := demo.Load(ctx, pool, time.Now())
	if err != nil {
		pool.Close()
		return err
	}
	member, err := memberToken(ctx, pool, d.AccountID)
	pool.Close()
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "crm-memload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "crm-server")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/crm-server")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build crm-server: %w", err)
	}
	env := []string{"DATABASE_URL=" + dbURL, "CRM_MAIL=off", "CRM_WEBHOOKS=off", "LOG_LEVEL=warn"}
	if o.largeRequests != "" {
		env = append(env, "LARGE_REQUESTS="+o.largeRequests)
	}
	if o.goMemLimit != "" {
		env = append(env, "GOMEMLIMIT="+o.goMemLimit)
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	mail := mailBody(d.MailAccountID, int(o.sizeMiB*(1<<20)))
	nested1 := nestedArrays(1 << 20)
	nested10 := nestedArrays(10 << 20)
	wide1 := []byte(`{"id": 1, "note": [` + strings.Repeat("0,", 524_000) + `0]}`)
	scenarios := []scenario{
		{name: "mail", what: fmt.Sprintf("%d concurrent `POST /mail/send` of %.1f MiB each (no rate limit)", o.clients, o.sizeMiB),
			env: []string{"RATE_LIMIT=0"}, goal: "peak under 500 MiB", met: func(_, peak int64) bool { return peak < 500<<20 },
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/mail/send", d.Token, mail, o.clients)
			}},
		{name: "nested", what: "40 concurrent `POST /company/update` of 1 MiB of nested arrays (`[` × 524,288, then `]`) from one member's token, default limits",
			goal: "peak under 200 MiB", met: func(_, peak int64) bool { return peak < 200<<20 }, after5s: true,
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/company/update", member, nested1, 40)
			}},
		{name: "wide", what: "40 concurrent `POST /company/update` of 1 MiB holding one array of 524,000 zeros from one member's token, default limits",
			goal: "peak under 200 MiB", met: func(_, peak int64) bool { return peak < 200<<20 }, after5s: true,
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/company/update", member, wide1, 40)
			}},
		{name: "nested-insert", what: "40 concurrent `POST /company/insert` of 1 MiB, nested arrays in one member (a schema that allows 26,206 values)",
			goal: "peak under 200 MiB", met: func(_, peak int64) bool { return peak < 200<<20 },
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/company/insert", member, insertWith(nestedArrays(1<<20-100)), 40)
			}},
		{name: "values-insert", what: "40 concurrent `POST /company/insert` with 26,000 values in one member (within the schema's bound: decoded, then refused by validation)",
			goal: "peak under 200 MiB", met: func(_, peak int64) bool { return peak < 200<<20 },
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/company/insert", member, insertWith([]byte("["+strings.Repeat("0,", 25_999)+"0]")), 40)
			}},
		{name: "nested-10", what: "one `POST /mail/send` of 10 MiB of nested arrays",
			goal: "peak less idle under twice the body (20 MiB)", met: func(idle, peak int64) bool { return peak-idle < 2*int64(len(nested10)) },
			send: func(ctx context.Context, base string) map[string]int {
				return sendAll(ctx, client, base+"/mail/send", d.Token, nested10, 1)
			}},
	}
	var results []result
	for _, sc := range scenarios {
		res, err := measure(ctx, bin, append(append([]string(nil), env...), sc.env...), sc)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		results = append(results, res)
	}
	limit := o.largeRequests
	if limit == "" {
		limit = "default (4)"
	}
	memLimit := o.goMemLimit
	if memLimit == "" {
		memLimit = "none (the default)"
	}
	var rows []string
	var failed []string
	for _, r := range results {
		after := "–"
		if r.after5s {
			after = mib(r.after)
		}
		var replies []string
		for _, k := range sortedKeys(r.replies) {
			replies = append(replies, fmt.Sprintf("%d × %s", r.replies[k], k))
		}
		ok := "yes"
		if !r.met(r.idle, r.peak) {
			ok = "**no**"
			failed = append(failed, fmt.Sprintf("%s: idle %s, peak %s (goal: %s)", r.name, mib(r.idle), mib(r.peak), r.goal))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.name, r.what, mib(r.idle), mib(r.peak),
			after, r.goal, ok, strings.Join(replies, ", "), r.elapsed.Round(10*time.Millisecond)))
	}
	result := fmt.Sprintf(`%s

Measured %s by `+"`make bench-memory`"+` (`+"`cmd/crm-memload`"+`): for each scenario a fresh crm-server process (LARGE_REQUESTS %s, GOMEMLIMIT %s), its resident memory read from /proc/PID/status every 20 ms (VmRSS; the peak is VmHWM).

| scenario | requests | idle | peak | 5 s after | goal | met | replies | time |
|---|---|---|---|---|---|---|---|---|
%s

%s
`, memBegin, time.Now().UTC().Format("2006-01-02 15:04 UTC"), limit, memLimit, strings.Join(rows, "\n"), memEnd)
	fmt.Print(result)
	if o.report != "" {
		if err := writeSection(o.report, result); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("goals missed: %s", strings.Join(failed, "; "))
	}
	return nil
}

// measure runs one scenario against a fresh crm-server process.
func measure(ctx context.Context, bin string, env []string, sc scenario) (result, error) {
	res := result{scenario: sc}
	port, err := freePort()
	if err != nil {
		return res, err
	}
	srv := exec.Command(bin, "serve")
	srv.Env = append(append(os.Environ(), env...), "PORT="+strconv.Itoa(port))
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return res, fmt.Errorf("start crm-server: %w", err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitReady(ctx, base); err != nil {
		return res, err
	}
	res.idle, _ = memory(srv.Process.Pid)
	var peak int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _ := memory(srv.Process.Pid); rss > peak {
				peak = rss
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	res.replies = sc.send(ctx, base)
	res.elapsed = time.Since(start)
	close(stopSampling)
	<-sampled
	_, hwm := memory(srv.Process.Pid)
	res.peak = max(peak, hwm)
	if sc.after5s {
		time.Sleep(5 * time.Second)
		res.after, _ = memory(srv.Process.Pid)
	}
	return res, nil
}

// memberToken issues a token of a member of the demo account.
func memberToken(ctx context.Context, pool *sqlx.DB, accountID int64) (string, error) {
	var userID int64
	if err := pool.GetContext(ctx, &userID, `SELECT id FROM users WHERE account_id = $1 AND role = 'member' ORDER BY id LIMIT 1`, accountID); err != nil {
		return "", fmt.Errorf("find a member of the demo account: %w", err)
	}
	_, token, err := impl.CreateToken(ctx, pool, userID, "crm-memload", time.Hour)
	return token, err
}

// sendAll posts body to target n times at once and returns the replies by kind.
func sendAll(ctx context.Context, client *http.Client, target, token string, body []byte, n int) map[string]int {
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		wg    sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			code := send(ctx, client, target, token, body)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes
}

// insertWith is a POST /company/insert whose member note is the JSON value v.
func insertWith(v []byte) []byte {
	return append(append([]byte(`{"name": "Memory", "type_id": 1, "user_id": 1, "note": `), v...), '}')
}

// nestedArrays is a JSON body of size bytes: arrays nested as deep as it holds.
func nestedArrays(size int) []byte {
	return append(bytes.Repeat([]byte("["), size/2), bytes.Repeat([]byte("]"), size/2)...)
}

const (
	memBegin = "## Memory under large requests\n\n<!-- crm-memload: begin (written by make bench-memory) -->"
	memEnd   = "<!-- crm-memload: end -->"
)

// writeSection replaces the section of the report between the markers, or
// appends it.
func writeSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	text := string(old)
	if i, j := strings.Index(text, memBegin), strings.Index(text, memEnd); i >= 0 && j > i {
		text = text[:i] + strings.TrimSpace(section) + text[j+len(memEnd):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// mailBody is a POST /mail/send of about size bytes: an HTML body whose Base64
// makes up nearly all of it.
func mailBody(mailAccountID int64, size int) []byte {
	line := []byte("<p>Memory under large requests: a paragraph of the body.</p>\n")
	html := bytes.Repeat(line, (size-1024)*3/4/len(line)) // the contract allows 10,000,000 characters of Base64
	b, _ := json.Marshal(map[string]any{"mail": map[string]any{
		"account_id": strconv.FormatInt(mailAccountID, 10),
		"to_address": "memload@example.com",
		"subject":    base64.StdEncoding.EncodeToString([]byte("A large message")),
		"body":       base64.StdEncoding.EncodeToString(html),
	}})
	return b
}

// send posts one request and returns the reply's HTTP status and envelope
// code ("0" is a mail sent), and for a "400" its text.
func send(ctx context.Context, client *http.Client, target, token string, body []byte) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	var env struct {
		Code  *string `json:"code"`
		Error string  `json:"error"`
	}
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &env); err != nil || env.Code == nil {
		return fmt.Sprintf("HTTP %d, not an envelope", res.StatusCode)
	}
	if *env.Code == "400" {
		return fmt.Sprintf("HTTP %d code %q (%s)", res.StatusCode, *env.Code, env.Error)
	}
	return fmt.Sprintf("HTTP %d code %q", res.StatusCode, *env.Code)
}

// memory reads VmRSS and VmHWM of a process, in bytes.
func memory(pid int) (rss, hwm int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(ctx context.Context, base string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("crm-server did not become ready within 2 minutes")
}

// freshDatabase makes the database crm_memload anew on the server of
// DATABASE_URL, or of the private cluster under ./.data, and returns its URL.
func freshDatabase(ctx context.Context, log *slog.Logger) (string, error) {
	server := os.Getenv("DATABASE_URL")
	if server == "" {
		cluster, err := db.EnsureLocal(ctx, ".data", log)
		if err != nil {
			return "", err
		}
		server = cluster.URL("postgres")
	}
	admin, err := db.Open(ctx, server)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS crm_memload WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE crm_memload`); err != nil {
		return "", err
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/crm_memload"
	return u.String(), nil
}
