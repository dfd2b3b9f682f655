package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl/mailer"
)

func TestMailAccountCommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv(mailer.SecretKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	account := mustCommand(t, "account", "create", "--name", "Acme", "--tz", "UTC")
	user := mustCommand(t, "user", "create", "--account", account, "--name", "Mia", "--login", "mia@acme.example")
	dir := t.TempDir()
	smtpFile, imapFile := filepath.Join(dir, "smtp"), filepath.Join(dir, "imap")
	if err := os.WriteFile(smtpFile, []byte("smtp-pa55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(imapFile, []byte("imap-pa55"), 0o600); err != nil {
		t.Fatal(err)
	}

	id := mustCommand(t, "mail-account", "create", "--user", user, "--address", "mia@acme.example", "--name", "Mia",
		"--smtp-host", "smtp.acme.example", "--smtp-password-file", smtpFile,
		"--imap-host", "imap.acme.example", "--imap-login", "mia", "--imap-password-file", imapFile)
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	box, err := mailer.NewSecretBox(os.Getenv(mailer.SecretKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	var secret []byte
	if err := pool.Get(&secret, `SELECT smtp_secret FROM mail_accounts WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var accountID int64
	if err := pool.Get(&accountID, `SELECT account_id FROM mail_accounts WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if p, err := box.Open(accountID, "smtp", secret); err != nil || p != "smtp-pa55" {
		t.Errorf("the SMTP password opens to %q, %v (the line end must be cut)", p, err)
	}

	list := mustCommand(t, "mail-account", "list", "--account", account)
	// Columns are aligned by at least two spaces.
	columns := regexp.MustCompile(`  +`)
	want := "ID|USER|ADDRESS|SMTP|IMAP|ACTIVE|QUEUED|FAILED|LAST POLL ERROR\n" +
		id + "|" + user + " Mia|mia@acme.example|starttls://mia@acme.example@smtp.acme.example:587 (password set)|tls://mia@imap.acme.example:993 (password set)|true|0|0"
	if got := columns.ReplaceAllString(list, "|"); got != want {
		t.Errorf("list:\n%s\nwant\n%s", got, want)
	}

	// Passwords from standard input: the SMTP one first.
	stdinID, err := commandIn(t, "smtp-in\nimap-in\n", "mail-account", "create", "--user", user, "--address", "box@acme.example",
		"--smtp-host", "smtp.acme.example", "--smtp-password-file", "-", "--imap-host", "imap.acme.example", "--imap-password-file", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID int64 }
	if err := json.Unmarshal([]byte(stdinID), &created); err != nil || created.ID == 0 {
		t.Fatalf("mail-account create -o json printed %q", stdinID)
	}
	var secrets struct {
		SMTP []byte `db:"smtp_secret"`
		IMAP []byte `db:"imap_secret"`
	}
	if err := pool.Get(&secrets, `SELECT smtp_secret, imap_secret FROM mail_accounts WHERE id = $1`, created.ID); err != nil {
		t.Fatal(err)
	}
	smtp, err1 := box.Open(accountID, "smtp", secrets.SMTP)
	imap, err2 := box.Open(accountID, "imap", secrets.IMAP)
	if smtp != "smtp-in" || imap != "imap-in" || err1 != nil || err2 != nil {
		t.Errorf("passwords from standard input open to %q, %q (%v, %v)", smtp, imap, err1, err2)
	}

	mustCommand(t, "mail-account", "disable", "--id", id)
	var listed []map[string]any
	out := mustCommand(t, "mail-account", "list", "--account", account, "-o", "json")
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("list -o json printed %s (%v)", out, err)
	}
	wantFirst := map[string]any{"id": float64(mustInt(t, id)), "user_id": float64(mustInt(t, user)), "user_name": "Mia", "address": "mia@acme.example",
		"display_name": "Mia", "smtp": "starttls://mia@acme.example@smtp.acme.example:587", "smtp_password": true,
		"imap": "tls://mia@imap.acme.example:993", "imap_password": true, "active": false, "queued": float64(0), "failed": float64(0),
		"imap_polled_at": nil, "imap_last_error": ""}
	if !reflect.DeepEqual(listed[0], wantFirst) {
		t.Errorf("list -o json, first:\n%v\nwant\n%v", listed[0], wantFirst)
	}
	if strings.Contains(out, "pa55") || strings.Contains(out, "-in") {
		t.Errorf("list -o json shows a password: %s", out)
	}

	before := countAccountRows(t, pool, "mail_accounts", account)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mail-account"}, "mail-account needs a command: create, disable, list (see crm-server mail-account --help)"},
		{[]string{"mail-account", "frobnicate"}, `unknown command "frobnicate" for "crm-server mail-account"`},
		{[]string{"mail-account", "disable", "--id", id}, "mail account " + id + " is already disabled"},
		{[]string{"mail-account", "disable", "--id", "987654321"}, "no mail account 987654321"},
		{[]string{"mail-account", "list", "--account", "987654321"}, "no account 987654321"},
		{[]string{"mail-account", "create", "--user", "987654321", "--address", "x@acme.example"}, "no user 987654321"},
		{[]string{"mail-account", "create", "--user", user, "--address", "bad address"},
			"create mail account: the address must be of the form local@domain.tld (ASCII, no spaces)"},
		{[]string{"mail-account", "create", "--user", user, "--address", "x@acme.example", "--smtp-host", "h.example", "--smtp-password-file", filepath.Join(dir, "missing")},
			"read a password: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"mail-account", "list", "--account", account, "--user", user}, "mail-account list: unknown flag: --user (see crm-server mail-account list --help)"},
	} {
		failing(t, tc.want, tc.args...)
	}
	t.Setenv(mailer.SecretKeyEnv, "")
	failing(t, mailer.ErrNoSecretKey.Error(),
		"mail-account", "create", "--user", user, "--address", "x@acme.example", "--smtp-host", "h.example", "--smtp-password-file", smtpFile)
	if n := countAccountRows(t, pool, "mail_accounts", account); n != before {
		t.Errorf("%d mail accounts after refused commands, want %d", n, before)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStartMail(t *testing.T) {
	pool := dbtest.New(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	startMail(context.Background(), log, pool, true, nil, nil)()
	if !strings.Contains(logs.String(), "mail worker not started") {
		t.Errorf("without a key: %s", logs.String())
	}
	logs.Reset()
	box, err := mailer.NewSecretBox(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	startMail(context.Background(), log, pool, false, box, nil)()
	if !strings.Contains(logs.String(), "mail worker off") {
		t.Errorf("turned off: %s", logs.String())
	}
	logs.Reset()
	stop := startMail(context.Background(), log, pool, true, box, nil)
	stop()
	if !strings.Contains(logs.String(), "mail worker started") || !strings.Contains(logs.String(), "mail worker stopped") {
		t.Errorf("with a key: %s", logs.String())
	}
}

// TestPasswordPrompt types the passwords of --smtp-password-file - and
// --imap-password-file - into a pseudo-terminal (script(1) of util-linux):
// each is prompted for on standard error and not echoed, and both are stored.
func TestPasswordPrompt(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed: no pseudo-terminal to type into")
	}
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	t.Setenv(mailer.SecretKeyEnv, key)
	account := mustCommand(t, "account", "create", "--name", "Acme", "--tz", "UTC")
	user := mustCommand(t, "user", "create", "--account", account, "--name", "Mia", "--login", "mia@acme.example")

	line := builtServer(t) + " mail-account create --user " + user + " --address mia@acme.example" +
		" --smtp-host smtp.acme.example --smtp-password-file - --imap-host imap.acme.example --imap-password-file -"
	cmd := exec.Command("script", "-qfec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, mailer.SecretKeyEnv+"="+key)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	keys, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(text string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(out.String(), text) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within a minute:\n%s", text, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("SMTP password of mia@acme.example: ")
	_, _ = keys.Write([]byte("smtp-typed-pa55\r"))
	waitFor("IMAP password of mia@acme.example: ")
	_, _ = keys.Write([]byte("imap-typed-pa55\r"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mail-account create on a terminal: %v\n%s", err, out.String())
	}
	printed := out.String()
	if strings.Contains(printed, "pa55") {
		t.Errorf("a typed password was echoed:\n%q", printed)
	}
	id := regexp.MustCompile(`(?m)^([0-9]+)\r?$`).FindStringSubmatch(printed)
	if id == nil {
		t.Fatalf("no id printed:\n%q", printed)
	}
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	box, err := mailer.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		AccountID int64  `db:"account_id"`
		SMTP      []byte `db:"smtp_secret"`
		IMAP      []byte `db:"imap_secret"`
	}
	if err := pool.Get(&row, `SELECT account_id, smtp_secret, imap_secret FROM mail_accounts WHERE id = $1`, id[1]); err != nil {
		t.Fatal(err)
	}
	if p, err := box.Open(row.AccountID, "smtp", row.SMTP); err != nil || p != "smtp-typed-pa55" {
		t.Errorf("the SMTP password opens to %q, %v", p, err)
	}
	if p, err := box.Open(row.AccountID, "imap", row.IMAP); err != nil || p != "imap-typed-pa55" {
		t.Errorf("the IMAP password opens to %q, %v", p, err)
	}
}
