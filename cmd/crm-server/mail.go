package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
)

func (c *cli) mailAccountCommand() *cobra.Command {
	var in impl.MailAccountInput
	var smtpFile, imapFile string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a mail account (a user's mailbox at a mail provider) and print its id",
		Long: `Create a mail account (a user's mailbox at a mail provider) and print its id.

Passwords are read from files ("-": a line of standard input, the SMTP one first;
on a terminal each is prompted for and not echoed), never from the command line, and stored encrypted with CRM_SECRET_KEY (Base64 of
32 bytes). Without --smtp-host the account does not send; without --imap-host it
is not polled.`,
		Example: `  crm-server mail-account create --user "$ANNA" --address anna@acme.example --name "Anna Berg" \
      --smtp-host smtp.acme.example --smtp-password-file - --imap-host imap.acme.example --imap-password-file -`,
		Args: noArgs,
	}
	f := create.Flags()
	f.Int64Var(&in.UserID, "user", 0, "`ID` of the user who owns the mailbox")
	f.StringVar(&in.Address, "address", "", "e-mail address of the mailbox")
	f.StringVar(&in.DisplayName, "name", "", "display name in the From header")
	for _, side := range []struct {
		name, port, security string
		srv                  *impl.MailServerInput
		file                 *string
	}{{"smtp", "587", "starttls", &in.SMTP, &smtpFile}, {"imap", "993", "tls", &in.IMAP, &imapFile}} {
		upper := strings.ToUpper(side.name)
		f.StringVar(&side.srv.Host, side.name+"-host", "", upper+" server host")
		f.IntVar(&side.srv.Port, side.name+"-port", 0, upper+" server port (default "+side.port+")")
		f.StringVar(&side.srv.Security, side.name+"-security", "", "none, starttls or tls (default "+side.security+")")
		f.StringVar(&side.srv.Login, side.name+"-login", "", upper+" login (default: the address, when a password is given)")
		f.StringVar(side.file, side.name+"-password-file", "", "file holding the "+upper+" password (-: a line of standard input, prompted for without echo on a terminal)")
		completeWords(create, side.name+"-security", "none", "starttls", "tls")
	}
	required(create, "user", "address")
	out := outputFlag(create, "the id")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		readLine := c.secretLines()
		var err error
		if in.SMTP.Password, err = readPassword(smtpFile, "SMTP password of "+in.Address, readLine); err != nil {
			return err
		}
		if in.IMAP.Password, err = readPassword(imapFile, "IMAP password of "+in.Address, readLine); err != nil {
			return err
		}
		var box *mailer.SecretBox
		if in.SMTP.Password != "" || in.IMAP.Password != "" {
			if box, err = mailer.NewSecretBox(os.Getenv(mailer.SecretKeyEnv)); err != nil {
				return err
			}
		}
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.CreateMailAccount(cmd.Context(), pool, box, in)
			if err != nil {
				return err
			}
			return c.printID(out, id)
		})
	}

	var account int64
	list := &cobra.Command{
		Use:   "list",
		Short: "List the mail accounts of an account with their state",
		Long: `List the mail accounts of an account with their state: messages waiting in the
outbox, messages that failed, the last poll error. Passwords are never shown, only
whether they are set.`,
		Args: noArgs,
	}
	list.Flags().Int64Var(&account, "account", 0, "`ID` of the account")
	required(list, "account")
	listOut := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			accounts, err := impl.ListMailAccounts(cmd.Context(), pool, account)
			if err != nil {
				return err
			}
			if *listOut == outJSON {
				return c.printJSON(mailAccountsJSON(accounts))
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tADDRESS\tSMTP\tIMAP\tACTIVE\tQUEUED\tFAILED\tLAST POLL ERROR")
			for _, a := range accounts {
				fmt.Fprintf(tw, "%d\t%d %s\t%s\t%s\t%s\t%t\t%d\t%d\t%s\n", a.ID, a.UserID, a.UserName, a.Address,
					withPassword(a.SMTP, a.SMTPPassword), withPassword(a.IMAP, a.IMAPPassword), a.Active, a.Queued, a.Failed, a.IMAPLastError)
			}
			return tw.Flush()
		})
	}

	var id int64
	disable := &cobra.Command{
		Use:   "disable",
		Short: "Disable a mail account: it is no longer polled and sends nothing more",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				return impl.DisableMailAccount(cmd.Context(), pool, id)
			})
		},
	}
	disable.Flags().Int64Var(&id, "id", 0, "`ID` of the mail account")
	required(disable, "id")
	return group("mail-account", "Create, list and disable mail accounts", create, list, disable)
}

// mailAccountJSON is a mail account as mail-account list -o json prints it.
type mailAccountJSON struct {
	ID            int64      `json:"id"`
	UserID        int64      `json:"user_id"`
	UserName      string     `json:"user_name"`
	Address       string     `json:"address"`
	DisplayName   string     `json:"display_name"`
	SMTP          string     `json:"smtp"` // security://login@host:port, "" when the account does not send
	SMTPPassword  bool       `json:"smtp_password"`
	IMAP          string     `json:"imap"`
	IMAPPassword  bool       `json:"imap_password"`
	Active        bool       `json:"active"`
	Queued        int        `json:"queued"`
	Failed        int        `json:"failed"`
	IMAPPolledAt  *time.Time `json:"imap_polled_at"`
	IMAPLastError string     `json:"imap_last_error"`
}

func mailAccountsJSON(list []impl.MailAccount) []mailAccountJSON {
	out := make([]mailAccountJSON, len(list))
	for i, a := range list {
		out[i] = mailAccountJSON{a.ID, a.UserID, a.UserName, a.Address, a.DisplayName, a.SMTP, a.SMTPPassword,
			a.IMAP, a.IMAPPassword, a.Active, a.Queued, a.Failed, a.IMAPPolledAt, a.IMAPLastError}
	}
	return out
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

// secretLines returns what reads the line of a secret given as "-": from a
// terminal, a prompt on standard error and the line read without echo; from
// anything else, the next line of standard input.
func (c *cli) secretLines() func(prompt string) (string, error) {
	if f, ok := c.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return func(prompt string) (string, error) {
			fmt.Fprintf(c.err, "%s: ", prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.err) // the line end the terminal did not echo
			if err != nil {
				return "", fmt.Errorf("read the %s from the terminal: %w", prompt, err)
			}
			return string(b), nil
		}
	}
	lines := sync.OnceValue(func() *bufio.Reader { return bufio.NewReader(c.in) })
	return func(string) (string, error) {
		line, err := lines().ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			return "", errors.New("read a password from standard input: no line left")
		}
		return line, nil
	}
}

// readPassword reads a password from a file, or for "-" a line of standard
// input (prompted for as prompt on a terminal), without its line end.
func readPassword(file, prompt string, stdin func(prompt string) (string, error)) (string, error) {
	var text string
	switch file {
	case "":
		return "", nil
	case "-":
		line, err := stdin(prompt)
		if err != nil {
			return "", err
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
// on is true and a key is given, and returns the function that stops it and
// waits for it. Without the key the API is served all the same: queued
// messages wait in the outbox for a process that has it.
func startMail(ctx context.Context, log *slog.Logger, pool *sqlx.DB, on bool, box *mailer.SecretBox, metrics *impl.Metrics) (stop func()) {
	switch {
	case !on:
		log.Info("mail worker off (--mail=false or CRM_MAIL=off)")
		return func() {}
	case box == nil:
		log.Warn("mail worker not started: queued messages are not delivered and mailboxes are not polled", "reason", mailer.ErrNoSecretKey.Error())
		return func() {}
	}
	w, err := impl.NewMailWorker(impl.MailConfig{DB: pool, Log: log, Secrets: box, Metrics: metrics})
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
