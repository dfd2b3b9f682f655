// Command crm-memload measures the memory a crm-server process needs under
// large requests: it builds and starts a real crm-server on a database of its
// own (crm_memload on the server of DATABASE_URL, or of the private cluster
// under ./.data, made anew each run with the demo account), sends concurrent
// POST /mail/send of about 9.5 MiB each, samples the process's resident memory
// from /proc/PID/status (VmRSS, and VmHWM, the peak), and writes the result
// into its section of docs/benchmarks.md.
//
//	go run ./cmd/crm-memload [-clients 20] [-size 9.5] [-large-requests 4] [-report docs/benchmarks.md]
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

	"github.com/crmservice/crm/db"
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
	report        string
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	var o options
	fs := flag.NewFlagSet("crm-memload", flag.ContinueOnError)
	fs.IntVar(&o.clients, "clients", 20, "concurrent POST /mail/send")
	fs.Float64Var(&o.sizeMiB, "size", 9.5, "size of each request body in MiB (at most 10)")
	fs.StringVar(&o.largeRequests, "large-requests", "", "LARGE_REQUESTS of the server (empty: its default)")
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
	port, err := freePort()
	if err != nil {
		return err
	}
	srv := exec.Command(bin, "serve")
	srv.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "PORT="+strconv.Itoa(port), "CRM_MAIL=off", "CRM_WEBHOOKS=off",
		"LOG_LEVEL=warn", "RATE_LIMIT=0")
	if o.largeRequests != "" {
		srv.Env = append(srv.Env, "LARGE_REQUESTS="+o.largeRequests)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start crm-server: %w", err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitReady(ctx, base); err != nil {
		return err
	}
	idle, _ := memory(srv.Process.Pid)

	body := mailBody(d.MailAccountID, int(o.sizeMiB*(1<<20)))
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		peak  int64
		wg    sync.WaitGroup
	)
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
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := 0; i < o.clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := send(ctx, client, base, d.Token, body)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	<-sampled
	_, hwm := memory(srv.Process.Pid)
	peak = max(peak, hwm)

	limit := o.largeRequests
	if limit == "" {
		limit = "default (4)"
	}
	var replies []string
	for _, k := range sortedKeys(codes) {
		replies = append(replies, fmt.Sprintf("%d × %s", codes[k], k))
	}
	result := fmt.Sprintf(`%s

Measured %s by `+"`make bench-memory`"+` (`+"`cmd/crm-memload`"+`): a real crm-server process (LARGE_REQUESTS %s), %d concurrent `+"`POST /mail/send`"+` of %.1f MiB each, the process's resident memory read from /proc/PID/status every 20 ms.

| | |
|---|---|
| resident memory, idle (VmRSS) | %s |
| resident memory, peak (VmHWM) | %s |
| goal | under 500 MiB |
| replies | %s |
| time for all | %s |

%s
`, memBegin, time.Now().UTC().Format("2006-01-02 15:04 UTC"), limit, o.clients, o.sizeMiB, mib(idle), mib(peak),
		strings.Join(replies, ", "), elapsed.Round(10*time.Millisecond), memEnd)
	fmt.Print(result)
	if o.report != "" {
		if err := writeSection(o.report, result); err != nil {
			return err
		}
	}
	if peak > 500<<20 {
		return fmt.Errorf("peak resident memory %s is over the goal of 500 MiB", mib(peak))
	}
	return nil
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

// send posts one message and returns the envelope's code ("0" is a success).
func send(ctx context.Context, client *http.Client, base, token string, body []byte) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mail/send", bytes.NewReader(body))
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
