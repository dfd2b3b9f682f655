package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// serverProcess is crm-server serve running as a program of its own.
type serverProcess struct {
	cmd  *exec.Cmd
	addr string
	log  *strings.Builder
	done chan error
}

// startProcess runs crm-server serve on a free port with env added to the
// test's environment and waits until it serves.
func startProcess(t *testing.T, env ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(builtServer(t), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), "LOG_FORMAT=text", "CRM_MAIL=off", "CRM_WEBHOOKS=off"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, log: &strings.Builder{}, done: make(chan error, 1)}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	serving := regexp.MustCompile(`msg=serving addr=(127\.0\.0\.1:[0-9]+)`)
	lines := bufio.NewScanner(stderr)
	for p.addr == "" && lines.Scan() {
		p.log.WriteString(lines.Text() + "\n")
		if m := serving.FindStringSubmatch(lines.Text()); m != nil {
			p.addr = m[1]
		}
	}
	if p.addr == "" {
		t.Fatalf("no serving line:\n%s", p.log.String())
	}
	go func() {
		rest, _ := io.ReadAll(stderr)
		p.log.Write(rest) // read only after done
		p.done <- cmd.Wait()
	}()
	return p
}

// TestIdempotencyCrashAfterCommit kills the server between the commit of a
// write made with an Idempotency-Key and its reply (the fault point
// CRM_FAULT=idempotency-after-commit), then retries the request on a new
// server: the retry gets the stored reply, with the id of the one record made.
func TestIdempotencyCrashAfterCommit(t *testing.T) {
	url := dbtest.NewURL(t)
	ctx := context.Background()
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	account, err := impl.CreateAccount(ctx, pool, impl.AccountInput{Name: "acme", BaseCurrency: "EUR", TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	user, err := impl.CreateUser(ctx, pool, impl.UserInput{AccountID: account, Name: "Anna", Login: "anna@acme.example", Role: impl.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := impl.CreateToken(ctx, pool, user, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	typeID, err := impl.AddDirectoryValue(ctx, pool, impl.DirectoryValueInput{AccountID: account, Code: impl.DirCompanyTypes, Name: "Client"})
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"name": "Contoso", "type_id": %d, "user_id": %d}`, typeID, user)
	send := func(addr string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/company/insert", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "insert-contoso-1")
		return http.DefaultClient.Do(req)
	}

	crashing := startProcess(t, "DATABASE_URL="+url, "CRM_FAULT=idempotency-after-commit")
	if resp, err := send(crashing.addr); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = crashing.cmd.Process.Kill()
		<-crashing.done
		t.Fatalf("the server at the fault point replied %d %s; its log:\n%s", resp.StatusCode, b, crashing.log.String())
	}
	select {
	case err := <-crashing.done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("the server ended with %v, want exit status 3\n%s", err, crashing.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit at the fault point")
	}
	if !strings.Contains(crashing.log.String(), "fault point") {
		t.Errorf("no fault point in the log:\n%s", crashing.log.String())
	}
	var stored int
	if err := pool.Get(&stored, `SELECT count(*) FROM companies WHERE account_id = $1`, account); err != nil || stored != 1 {
		t.Fatalf("%d counterparties after the crash (%v), want the 1 committed", stored, err)
	}

	again := startProcess(t, "DATABASE_URL="+url)
	resp, err := send(again.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string  `json:"status"`
		Code   *string `json:"code"`
		Value  string  `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.Get(&id, `SELECT id FROM companies WHERE account_id = $1`, account); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || env.Status != "success" || env.Code != nil || env.Value != fmt.Sprint(id) ||
		resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %+v Idempotent-Replayed %q, want the replay of id %d", resp.StatusCode, env, resp.Header.Get("Idempotent-Replayed"), id)
	}
	if err := pool.Get(&stored, `SELECT count(*) FROM companies WHERE account_id = $1`, account); err != nil || stored != 1 {
		t.Errorf("%d counterparties after the retry (%v), want 1", stored, err)
	}
}
