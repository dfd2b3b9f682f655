// Package faults holds the fault suite (make test-faults): real crm-server
// processes over a private PostgreSQL cluster under ./.data/faults, which the
// tests kill, freeze, restart and stop. It runs only with CRM_FAULTS=1, which
// .ci/test-faults.sh sets after building bin/crm-server; plain go test skips it.
package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/jmoiron/sqlx"
)

// suite is what TestMain prepared: the binary, the cluster and the demo account.
var suite struct {
	skip    string
	root    string // the repository
	bin     string // bin/crm-server
	dataDir string // CRM_DATA_DIR of the private cluster (.data/faults)
	url     string // the database faults in it
	token   string // the demo admin's token
	account int64
	userID  string
	typeID  int64  // a company type of the demo account
	company string // a company of the demo account
	pool    *sqlx.DB
}

func TestMain(m *testing.M) {
	if os.Getenv("CRM_FAULTS") != "1" {
		suite.skip = "the fault suite runs with CRM_FAULTS=1 (make test-faults): it kills and freezes processes"
		os.Exit(m.Run())
	}
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: setup:", err)
		os.Exit(1)
	}
	code := m.Run()
	suite.pool.Close()
	os.Exit(code)
}

func setup() error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	suite.root = root
	suite.bin = filepath.Join(root, "bin", "crm-server")
	if _, err := os.Stat(suite.bin); err != nil {
		return fmt.Errorf("%s is missing: build it first (.ci/test-faults.sh does): %w", suite.bin, err)
	}
	suite.dataDir = filepath.Join(root, ".data", "faults")
	out, err := crm("db", "start", "faults")
	if err != nil {
		return err
	}
	suite.url = strings.TrimSpace(out)
	if _, err := crm("migrate"); err != nil {
		return err
	}
	demo, err := crm("demo")
	if err != nil {
		return err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(demo, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	suite.token, suite.userID = vars["token"], vars["admin_user_id"]
	if suite.account, err = strconv.ParseInt(vars["account_id"], 10, 64); err != nil {
		return fmt.Errorf("demo: no account_id in %q", demo)
	}
	if suite.pool, err = db.Open(context.Background(), suite.url); err != nil {
		return err
	}
	suite.company = vars["sample_company_id"]
	return suite.pool.Get(&suite.typeID, `SELECT type_id FROM companies WHERE account_id = $1 AND id = $2`,
		suite.account, vars["sample_company_id"])
}

// crm runs bin/crm-server with args on the private cluster and returns its stdout.
func crm(args ...string) (string, error) {
	cmd := exec.Command(suite.bin, args...)
	cmd.Env = append(os.Environ(), "CRM_DATA_DIR="+suite.dataDir, "LOG_FORMAT=text")
	if suite.url != "" {
		cmd.Env = append(cmd.Env, "DATABASE_URL="+suite.url)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("crm-server %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func need(t *testing.T) {
	t.Helper()
	if suite.skip != "" {
		t.Skip(suite.skip)
	}
}

// server is a crm-server serve process.
type server struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
}

var servingLine = regexp.MustCompile(`msg=serving addr=(127\.0\.0\.1:[0-9]+)`)

// startServer runs crm-server serve on a free port over the private cluster
// (no rate limit, no workers unless env turns them on) and waits until it serves.
func startServer(t *testing.T, env ...string) *server {
	t.Helper()
	cmd := exec.Command(suite.bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), "CRM_DATA_DIR="+suite.dataDir, "DATABASE_URL="+suite.url, "LOG_FORMAT=text",
		"RATE_LIMIT=0", "AUTH_FAILURE_LIMIT=0", "CRM_MAIL=off", "CRM_WEBHOOKS=off"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { s.kill() })
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			s.mu.Lock()
			s.log.WriteString(lines.Text() + "\n")
			s.mu.Unlock()
			if m := servingLine.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case s.addr = <-found:
	case <-s.done:
		t.Fatalf("crm-server serve ended before serving:\n%s", s.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("crm-server serve did not serve within 60 s:\n%s", s.logText())
	}
	return s
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// kill ends the process with SIGKILL and waits for it.
func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// envelope is the reply of every operation.
type envelope struct {
	Status string  `json:"status"`
	Error  string  `json:"error"`
	Code   *string `json:"code"`
	Value  string  `json:"value"`
}

func (e envelope) code() string {
	if e.Code == nil {
		return "null"
	}
	return *e.Code
}

// reply is one request's outcome: err when there was no HTTP reply at all,
// envErr when the reply was not an envelope.
type reply struct {
	status  int
	env     envelope
	err     error
	envErr  error
	elapsed time.Duration
}

func (r reply) String() string {
	switch {
	case r.err != nil:
		return fmt.Sprintf("no reply after %v: %v", r.elapsed.Round(time.Millisecond), r.err)
	case r.envErr != nil:
		return fmt.Sprintf("%d not an envelope after %v: %v", r.status, r.elapsed.Round(time.Millisecond), r.envErr)
	}
	return fmt.Sprintf("%d %s %q %q after %v", r.status, r.env.code(), r.env.Error, r.env.Value, r.elapsed.Round(time.Millisecond))
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends one request with the demo admin's token (header sets more headers).
func call(addr, method, path, body string, header ...string) reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+suite.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := client.Do(req)
	r := reply{err: err}
	if err == nil {
		r.status = resp.StatusCode
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case rerr != nil:
			r.err = rerr
		default:
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				r.envErr = fmt.Errorf("%v: %.200q", err, b)
			} else if _, ok := raw["status"]; !ok {
				r.envErr = fmt.Errorf("no status: %.200q", b)
			} else if err := json.Unmarshal(b, &r.env); err != nil {
				r.envErr = fmt.Errorf("%v: %.200q", err, b)
			}
		}
	}
	r.elapsed = time.Since(start)
	return r
}

func (r reply) ok() bool {
	return r.err == nil && r.envErr == nil && r.status == http.StatusOK && r.env.Status == "success"
}

// insertBody is a company insert of the demo account named name.
func insertBody(name string) string {
	return fmt.Sprintf(`{"name": %q, "type_id": %d, "user_id": %s}`, name, suite.typeID, suite.userID)
}

// waitHealthy waits until a read on addr succeeds again, within limit.
func waitHealthy(t *testing.T, addr string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last reply
	for time.Since(start) < limit {
		if last = read(addr); last.ok() {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the server did not recover by itself within %v: last reply %s", limit, last)
	return 0
}

// read gets the demo account's sample company.
func read(addr string) reply {
	return call(addr, http.MethodGet, "/company/get?id="+suite.company, "")
}
