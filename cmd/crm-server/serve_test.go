package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestMain removes the binary that the tests of the built command share.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

// builtServer builds crm-server once for the tests that run it as a program.
func builtServer(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binError = os.MkdirTemp("", "crm-server-test-"); binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "crm-server")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// syncBuffer is a buffer that a running command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveRun is crm-server serve running in the test's process.
type serveRun struct {
	out, log syncBuffer
	cancel   context.CancelFunc
	done     chan error
}

func startServe(t *testing.T, args ...string) *serveRun {
	t.Helper()
	s := &serveRun{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	log := slog.New(slog.NewTextHandler(&s.log, nil))
	go func() {
		s.done <- run(ctx, log, streams{in: strings.NewReader(""), out: &s.out, err: io.Discard}, append([]string{"serve"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// wait returns what the run printed once the log has a line with msg, or
// the run's error if it ended first.
func (s *serveRun) wait(t *testing.T, msg string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(s.log.String(), "msg="+msg) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve ended before %q: %v\nlog:\n%s", msg, err, s.log.String())
		case <-deadline:
			t.Fatalf("no %q in the log:\n%s", msg, s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestServeConfiguration(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1") // never reached
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"PORT not a number", map[string]string{"PORT": "http"}, nil, `PORT "http" is not a port number (1 to 65535)`},
		{"PORT out of range", map[string]string{"PORT": "70000"}, nil, `PORT "70000" is not a port number (1 to 65535)`},
		{"--addr without a port", nil, []string{"--addr", "localhost"}, `--addr "localhost" is not host:port, such as :8080 or 127.0.0.1:8080`},
		{"--addr with a bad port", nil, []string{"--addr", ":http"}, `--addr ":http": the port is not a number from 0 to 65535`},
		{"RATE_LIMIT", map[string]string{"RATE_LIMIT": "fast"}, nil, `RATE_LIMIT "fast" is not a number`},
		{"RATE_BURST", map[string]string{"RATE_BURST": "1.5"}, nil, `RATE_BURST "1.5" is not a whole number`},
		{"negative rate", nil, []string{"--rate-limit", "-1"}, "the rate limit (-1) and burst (100) must not be negative"},
		{"CRM_MAIL", map[string]string{"CRM_MAIL": "maybe"}, nil, `CRM_MAIL "maybe" is not on or off`},
		{"CRM_SECRET_KEY", map[string]string{"CRM_SECRET_KEY": "c2hvcnQ="}, nil, "CRM_SECRET_KEY: the key must be 32 bytes, it is 5"},
		{"a flag of another command", nil, []string{"--user", "1"}, "serve: unknown flag: --user (see crm-server serve --help)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			s := startServe(t, tc.args...)
			var err error
			select {
			case err = <-s.done:
				s.done <- err
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop")
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if s.out.String() != "" || s.log.String() != "" {
				t.Errorf("printed before failing:\n%s\nlog:\n%s", s.out.String(), s.log.String())
			}
		})
	}
	// The key encrypts webhook secrets for the API too, so a bad one stops serve even
	// with the mail and webhook workers off; CRM_WEBHOOKS and WEBHOOK_* are checked.
	for name, env := range map[string]map[string]string{
		"CRM_SECRET_KEY: the key must be 32 bytes, it is 5":                                {"CRM_SECRET_KEY": "c2hvcnQ="},
		`CRM_WEBHOOKS "maybe" is not on or off`:                                            {"CRM_WEBHOOKS": "maybe"},
		`WEBHOOK_ALLOWED_NETWORKS: "10.0.0.0/33" is neither a CIDR nor an address`:         {"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/33"},
		`WEBHOOK_TIMEOUT "1h" is not a duration from 100ms to 5m (such as 10s)`:            {"WEBHOOK_TIMEOUT": "1h"},
		`DEADLINE_READ "soon" is not a duration from 100ms to 10m (such as 5s)`:            {"DEADLINE_READ": "soon"},
		`DEADLINE_MAIL "1h" is not a duration from 100ms to 10m (such as 5s)`:              {"DEADLINE_MAIL": "1h"},
		`LARGE_REQUESTS "0" is not a number from 1 to 10000, or off`:                       {"LARGE_REQUESTS": "0"},
		`MAX_IN_FLIGHT "many" is not a number from 1 to 100000, or off`:                    {"MAX_IN_FLIGHT": "many"},
		`DB_CONN_MAX_LIFETIME "10" is not a duration from 1s to 24h (such as 10m), or off`: {"DB_CONN_MAX_LIFETIME": "10"},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range env {
				t.Setenv(k, v)
			}
			s := startServe(t, "--mail=false", "--addr", "127.0.0.1:0")
			err := <-s.done
			s.done <- err
			if err == nil || err.Error() != name {
				t.Errorf("error %v, want %q", err, name)
			}
		})
	}
	t.Run("the workers off, a valid key", func(t *testing.T) {
		t.Setenv("CRM_SECRET_KEY", base64.StdEncoding.EncodeToString(make([]byte, 32)))
		s := startServe(t, "--mail=false", "--webhooks=false", "--addr", "127.0.0.1:0")
		err := <-s.done
		s.done <- err
		if err == nil || !strings.HasPrefix(err.Error(), "connect to database") {
			t.Errorf("error %v, want the database's", err)
		}
	})
}

func TestServePortTaken(t *testing.T) {
	// Needs a database of its own: it checks that no account at all was made.
	dbtest.RequireOwnDatabase(t)
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	s := startServe(t, "--addr", addr, "--migrate", "--demo")
	err = <-s.done
	s.done <- err
	want := "cannot listen on " + addr + ": the port is taken by another program (choose another with PORT or --addr)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if s.out.String() != "" || s.log.String() != "" {
		t.Errorf("printed before failing:\n%s\nlog:\n%s", s.out.String(), s.log.String())
	}
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if n := countRows(t, pool, "accounts"); n != 0 {
		t.Errorf("the demo was loaded (%d accounts) although the port was taken", n)
	}
}

func TestServeDemo(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	t.Setenv("CRM_MAIL", "off")
	withJq, withoutJq := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(withJq, "jq"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, tail string
	}{
		{"without jq", withoutJq, "\n\nThe reply's value is a string of JSON: with jq installed (it is not), add\n  | jq '.value | fromjson'\nto read it as JSON.\n\n"},
		{"with jq", withJq, " | jq '.value | fromjson'\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			s := startServe(t, "--addr", "127.0.0.1:0", "--demo")
			s.wait(t, "serving")
			out := s.out.String()
			m := regexp.MustCompile(`curl -s -H 'Authorization: Bearer (crm_\w+)' '(http://127\.0\.0\.1:[0-9]+/company/get\?id=([0-9]+))'`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("serve --demo printed no curl:\n%s", out)
			}
			base := strings.TrimSuffix(m[2], "/company/get?id="+m[3])
			want := "\nThe demo account is ready; its admin's token (valid 30 days): " + m[1] + "\nTry:\n\n  " + m[0] + tc.tail +
				"Every operation is explained at " + base + "/docs\n\n"
			if out != want {
				t.Fatalf("serve --demo printed\n%s\nwant\n%s", out, want)
			}
			// The curl it prints works.
			req, _ := http.NewRequest(http.MethodGet, m[2], nil)
			req.Header.Set("Authorization", "Bearer "+m[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var env struct {
				Status string `json:"status"`
				Value  string `json:"value"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Status != "success" {
				t.Fatalf("the printed request answered %d %+v (%v)", resp.StatusCode, env, err)
			}
			var card struct {
				Company struct{ ID int64 } `json:"company"`
			}
			if err := json.Unmarshal([]byte(env.Value), &card); err != nil || fmt.Sprint(card.Company.ID) != m[3] {
				t.Errorf("value of the printed request: %s (%v)", env.Value, err)
			}

			s.cancel()
			if err := <-s.done; err != nil {
				t.Errorf("serve ended with %v when interrupted, want nil", err)
			}
			s.done <- nil
			if log := s.log.String(); !strings.Contains(log, "msg=\"shutting down\"") || strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// TestServeInterrupt runs the program: SIGINT ends it quietly with status 0.
func TestServeInterrupt(t *testing.T) {
	bin := builtServer(t)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbtest.NewURL(t), "LOG_FORMAT=text", "CRM_MAIL=off")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log strings.Builder
	serving := regexp.MustCompile(`msg=serving addr=(127\.0\.0\.1:[0-9]+)`)
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := serving.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no serving line:\n%s", log.String())
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	log.Write(rest)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGINT: %v, want status 0\n%s", err, log.String())
	}
	if stdout.String() != "" || strings.Contains(log.String(), "crm-server:") || strings.Contains(log.String(), "level=ERROR") ||
		!strings.Contains(log.String(), `msg="shutting down"`) {
		t.Errorf("stdout %q, log:\n%s", stdout.String(), log.String())
	}
}
