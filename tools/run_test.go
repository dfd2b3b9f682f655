// Package tools holds the Makefile's helpers; its test drives make run.
package tools

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// terminal runs a command line on a pseudo-terminal (script(1) of util-linux),
// so that a Ctrl-C typed into it is delivered as a terminal delivers it: to
// the foreground process group.
type terminal struct {
	cmd   *exec.Cmd
	keys  io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	ended chan error
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.Write(p)
}

func (t *terminal) output() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

func startTerminal(t *testing.T, env []string, line string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed: no pseudo-terminal to type Ctrl-C into")
	}
	term := &terminal{ended: make(chan error, 1)}
	term.cmd = exec.Command("script", "-qfec", line, "/dev/null")
	term.cmd.Dir = ".."
	term.cmd.Env = append(os.Environ(), env...)
	term.cmd.Stdout, term.cmd.Stderr = term, term
	var err error
	if term.keys, err = term.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := term.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { term.ended <- term.cmd.Wait() }()
	t.Cleanup(func() {
		_ = term.cmd.Process.Kill()
	})
	return term
}

// waitFor waits until the output holds text.
func (term *terminal) waitFor(t *testing.T, text string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(term.output(), text) {
		select {
		case err := <-term.ended:
			t.Fatalf("ended (%v) before %q:\n%s", err, text, term.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %v:\n%s", text, within, term.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interrupt types Ctrl-C and returns how the command ended.
func (term *terminal) interrupt(t *testing.T) error {
	t.Helper()
	if _, err := term.keys.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-term.ended:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("still running a minute after Ctrl-C:\n%s", term.output())
		return nil
	}
}

// TestMakeRunInterrupted types Ctrl-C into make run: while it compiles (a
// compiler that takes its time) and while it serves. Both times make run
// ends with status 0 and no complaint of make.
func TestMakeRunInterrupted(t *testing.T) {
	t.Run("while compiling", func(t *testing.T) {
		slow := filepath.Join(t.TempDir(), "go")
		// go list (what make run counts) answers at once; go build takes its time.
		if err := os.WriteFile(slow, []byte("#!/bin/sh\n[ \"$1\" = list ] && exit 0\necho \"compiler: $*\"\nexec sleep 120\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		term := startTerminal(t, []string{"CRM_RUN_BIN=" + filepath.Join(t.TempDir(), "crm-server")}, "make -s run GO="+slow)
		term.waitFor(t, "compiler: build -v -o", time.Minute)
		if err := term.interrupt(t); err != nil {
			t.Errorf("make run ended with %v after Ctrl-C, want status 0:\n%s", err, term.output())
		}
		out := term.output()
		if !strings.Contains(out, "run: compiling crm-server") || !strings.Contains(out, "run: interrupted while compiling") ||
			strings.Contains(out, "make:") || strings.Contains(out, "Terminated") {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("while serving", func(t *testing.T) {
		dbtest.RequireOwnDatabase(t) // it loads the demo account
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		url := dbtest.NewURL(t)
		bin := filepath.Join(t.TempDir(), "crm-server")
		// Twice: the second start finds the binary built and the demo loaded,
		// and replaces the demo tokens of the first instead of adding two.
		var tokens []string
		for run := 1; run <= 2; run++ {
			term := startTerminal(t, []string{
				"DATABASE_URL=" + url, "PORT=" + strconv.Itoa(port), "CRM_MAIL=off", "CRM_RUN_BIN=" + bin,
			}, "make -s run")
			term.waitFor(t, "msg=serving", 5*time.Minute)
			if err := term.interrupt(t); err != nil {
				t.Errorf("make run ended with %v after Ctrl-C, want status 0:\n%s", err, term.output())
			}
			out := term.output()
			for _, want := range []string{"run: compiling crm-server", "run: starting crm-server on :" + strconv.Itoa(port) + " over DATABASE_URL",
				`msg="migrating the schema`, "The demo account is ready", "/docs", `msg="shutting down"`} {
				if !strings.Contains(out, want) {
					t.Errorf("run %d: no %q in the output:\n%s", run, want, out)
				}
			}
			if strings.Contains(out, "make:") || strings.Contains(out, "level=ERROR") {
				t.Errorf("run %d: output:\n%s", run, out)
			}
			m := regexp.MustCompile(`token \(valid 30 days\): (crm_\w+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("run %d printed no token:\n%s", run, out)
			}
			tokens = append(tokens, m[1])
		}
		pool, err := db.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var states []string
		if err := pool.Select(&states, `SELECT label || ' ' || CASE WHEN revoked_at IS NULL THEN 'valid' ELSE 'revoked' END
			FROM tokens ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		want := []string{"demo: serve --demo revoked", "demo: serve --demo revoked", "demo: serve --demo valid", "demo: serve --demo valid"}
		if !slices.Equal(states, want) {
			t.Errorf("tokens after two runs: %q, want %q", states, want)
		}
		var valid []bool
		for _, token := range tokens {
			var v bool
			if err := pool.Get(&v, `SELECT revoked_at IS NULL FROM tokens WHERE hash = $1`, impl.HashToken(token)); err != nil {
				t.Fatal(err)
			}
			valid = append(valid, v)
		}
		if !slices.Equal(valid, []bool{false, true}) {
			t.Errorf("the tokens the runs printed are valid %v, want the second's alone", valid)
		}
	})
}
