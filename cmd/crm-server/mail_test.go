package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl/mailer"
)

func TestMailAccountCommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv(mailer.SecretKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	account := mustCommand(t, "account", "create", "-name", "Acme", "-tz", "UTC")
	user := mustCommand(t, "user", "create", "-account", account, "-name", "Mia", "-login", "mia@acme.example")
	dir := t.TempDir()
	smtpFile, imapFile := filepath.Join(dir, "smtp"), filepath.Join(dir, "imap")
	if err := os.WriteFile(smtpFile, []byte("smtp-pa55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(imapFile, []byte("imap-pa55"), 0o600); err != nil {
		t.Fatal(err)
	}

	id := mustCommand(t, "mail-account", "create", "-user", user, "-address", "mia@acme.example", "-name", "Mia",
		"-smtp-host", "smtp.acme.example", "-smtp-password-file", smtpFile,
		"-imap-host", "imap.acme.example", "-imap-login", "mia", "-imap-password-file", imapFile)
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

	list := mustCommand(t, "mail-account", "list", "-account", account)
	if !strings.Contains(list, "starttls://mia@acme.example@smtp.acme.example:587 (password set)") ||
		!strings.Contains(list, "tls://mia@imap.acme.example:993 (password set)") || strings.Contains(list, "pa55") {
		t.Errorf("list:\n%s", list)
	}
	mustCommand(t, "mail-account", "disable", "-id", id)
	if list := mustCommand(t, "mail-account", "list", "-account", account); !strings.Contains(list, "false") {
		t.Errorf("list after disable:\n%s", list)
	}

	for _, args := range [][]string{
		{"mail-account"},
		{"mail-account", "frobnicate"},
		{"mail-account", "disable", "-id", id},
		{"mail-account", "create", "-user", user, "-address", "bad address"},
		{"mail-account", "create", "-user", user, "-address", "x@acme.example", "-smtp-host", "h.example", "-smtp-password-file", filepath.Join(dir, "missing")},
	} {
		if _, err := command(t, args...); err == nil {
			t.Errorf("crm-server %s succeeded", strings.Join(args, " "))
		}
	}
	t.Setenv(mailer.SecretKeyEnv, "")
	if _, err := command(t, "mail-account", "create", "-user", user, "-address", "x@acme.example", "-smtp-host", "h.example", "-smtp-password-file", smtpFile); err == nil ||
		!strings.Contains(err.Error(), mailer.SecretKeyEnv) {
		t.Errorf("a password without a key: %v", err)
	}
}

func TestStartMail(t *testing.T) {
	pool := dbtest.New(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t.Setenv(mailer.SecretKeyEnv, "")
	startMail(context.Background(), log, pool, true)()
	if !strings.Contains(logs.String(), "mail worker not started") {
		t.Errorf("without a key: %s", logs.String())
	}
	logs.Reset()
	t.Setenv(mailer.SecretKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	stop := startMail(context.Background(), log, pool, true)
	stop()
	if !strings.Contains(logs.String(), "mail worker started") || !strings.Contains(logs.String(), "mail worker stopped") {
		t.Errorf("with a key: %s", logs.String())
	}
}
