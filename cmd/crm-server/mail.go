package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
)

// mailAccount runs `crm-server mail-account create|list|disable`.
//
//	mail-account create -user ID -address A [-name N]
//	    [-smtp-host H] [-smtp-port 587] [-smtp-security starttls] [-smtp-login L] [-smtp-password-file F]
//	    [-imap-host H] [-imap-port 993] [-imap-security tls] [-imap-login L] [-imap-password-file F]
//	mail-account list -account ID
//	mail-account disable -id ID
//
// Passwords are read from files ("-": a line of standard input, the SMTP one
// first), never from the command line, and stored encrypted with CRM_SECRET_KEY.
func mailAccount(ctx context.Context, log *slog.Logger, stdin io.Reader, stdout io.Writer, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: crm-server mail-account create|list|disable ...")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("mail-account "+sub, flag.ContinueOnError)
	var run func(context.Context, *sqlx.DB) error
	switch sub {
	case "create":
		var in impl.MailAccountInput
		var smtpFile, imapFile string
		fs.Int64Var(&in.UserID, "user", 0, "id of the user who owns the mailbox")
		fs.StringVar(&in.Address, "address", "", "e-mail address of the mailbox")
		fs.StringVar(&in.DisplayName, "name", "", "display name in the From header")
		for _, side := range []struct {
			name string
			srv  *impl.MailServerInput
			file *string
		}{{"smtp", &in.SMTP, &smtpFile}, {"imap", &in.IMAP, &imapFile}} {
			fs.StringVar(&side.srv.Host, side.name+"-host", "", side.name+" server host")
			fs.IntVar(&side.srv.Port, side.name+"-port", 0, side.name+" server port (default 587 for smtp, 993 for imap)")
			fs.StringVar(&side.srv.Security, side.name+"-security", "", "none, starttls or tls (default starttls for smtp, tls for imap)")
			fs.StringVar(&side.srv.Login, side.name+"-login", "", side.name+" login (default: the address, when a password is given)")
			fs.StringVar(side.file, side.name+"-password-file", "", "file holding the "+side.name+" password (-: a line of standard input)")
		}
		run = func(ctx context.Context, pool *sqlx.DB) error {
			readLine := sync.OnceValue(func() *bufio.Reader { return bufio.NewReader(stdin) })
			var err error
			if in.SMTP.Password, err = readPassword(smtpFile, readLine); err != nil {
				return err
			}
			if in.IMAP.Password, err = readPassword(imapFile, readLine); err != nil {
				return err
			}
			var box *mailer.SecretBox
			if in.SMTP.Password != "" || in.IMAP.Password != "" {
				if box, err = mailer.NewSecretBox(os.Getenv(mailer.SecretKeyEnv)); err != nil {
					return err
				}
			}
			id, err := impl.CreateMailAccount(ctx, pool, box, in)
			if err == nil {
				fmt.Fprintln(stdout, id)
			}
			return err
		}
	case "list":
		account := fs.Int64("account", 0, "account id")
		run = func(ctx context.Context, pool *sqlx.DB) error {
			list, err := impl.ListMailAccounts(ctx, pool, *account)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tADDRESS\tSMTP\tIMAP\tACTIVE\tQUEUED\tFAILED\tLAST POLL ERROR")
			for _, a := range list {
				fmt.Fprintf(tw, "%d\t%d %s\t%s\t%s\t%s\t%t\t%d\t%d\t%s\n", a.ID, a.UserID, a.UserName, a.Address,
					withPassword(a.SMTP, a.SMTPPassword), withPassword(a.IMAP, a.IMAPPassword), a.Active, a.Queued, a.Failed, a.IMAPLastError)
			}
			return tw.Flush()
		}
	case "disable":
		id := fs.Int64("id", 0, "mail account id")
		run = func(ctx context.Context, pool *sqlx.DB) error { return impl.DisableMailAccount(ctx, pool, *id) }
	default:
		return fmt.Errorf("unknown command %q", "mail-account "+sub)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := openDB(ctx, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := db.CheckSchema(ctx, pool); err != nil {
		return err
	}
	return run(ctx, pool)
}

func withPassword(server string, has bool) string {
	switch {
	case server == "":
		return "-"
	case has:
		return server + " (password set)"
	}
	return server
}

// readPassword reads a password from a file, or a line of standard input for
// "-", without its line end.
func readPassword(file string, stdin func() *bufio.Reader) (string, error) {
	var text string
	switch file {
	case "":
		return "", nil
	case "-":
		line, err := stdin().ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			return "", errors.New("read a password from standard input: no line left")
		}
		text = line
	default:
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read a password: %w", err)
		}
		text = string(b)
	}
	text = strings.TrimRight(text, "\r\n")
	if text == "" {
		return "", errors.New("read a password: it is empty")
	}
	return text, nil
}

// startMail starts the mail worker (outbox delivery and mailbox polling) when
// on is true and CRM_SECRET_KEY is set, and returns the function that stops it
// and waits for it. Without the key the API is served all the same: queued
// messages wait in the outbox for a process that has it.
func startMail(ctx context.Context, log *slog.Logger, pool *sqlx.DB, on bool) (stop func()) {
	if !on {
		log.Info("mail worker off (-mail=false)")
		return func() {}
	}
	box, err := mailer.NewSecretBox(os.Getenv(mailer.SecretKeyEnv))
	if err != nil {
		log.Warn("mail worker not started: queued messages are not delivered and mailboxes are not polled", "reason", err.Error())
		return func() {}
	}
	w, err := impl.NewMailWorker(impl.MailConfig{DB: pool, Log: log, Secrets: box})
	if err != nil {
		log.Error("mail worker not started", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
