package impl_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
)

func TestMailAccounts(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	box := testSecretBox(t)
	ctx := context.Background()

	t.Run("OK: created with encrypted passwords and defaults", func(t *testing.T) {
		id, err := impl.CreateMailAccount(ctx, e.db, box, impl.MailAccountInput{
			UserID: w.member.id, Address: "member@acme.example", DisplayName: " Member M ",
			SMTP: impl.MailServerInput{Host: "smtp.acme.example", Password: "smtp-secret"},
			IMAP: impl.MailServerInput{Host: "imap.acme.example", Login: "member", Password: "imap-secret"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var row struct {
			AccountID    int64  `db:"account_id"`
			DisplayName  string `db:"display_name"`
			SMTPPort     int    `db:"smtp_port"`
			SMTPSecurity string `db:"smtp_security"`
			SMTPLogin    string `db:"smtp_login"`
			SMTPSecret   []byte `db:"smtp_secret"`
			IMAPPort     int    `db:"imap_port"`
			IMAPSecurity string `db:"imap_security"`
			IMAPLogin    string `db:"imap_login"`
			IMAPSecret   []byte `db:"imap_secret"`
			Active       bool   `db:"active"`
		}
		if err := e.db.Get(&row, `SELECT account_id, display_name, smtp_port, smtp_security, smtp_login, smtp_secret,
			imap_port, imap_security, imap_login, imap_secret, active FROM mail_accounts WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if row.AccountID != w.accountID || row.DisplayName != "Member M" || row.SMTPPort != 587 || row.SMTPSecurity != "starttls" ||
			row.SMTPLogin != "member@acme.example" || row.IMAPPort != 993 || row.IMAPSecurity != "tls" || row.IMAPLogin != "member" || !row.Active {
			t.Errorf("stored %+v", row)
		}
		if bytes.Contains(row.SMTPSecret, []byte("smtp-secret")) || bytes.Contains(row.IMAPSecret, []byte("imap-secret")) {
			t.Error("a password is stored in clear")
		}
		if p, err := box.Open(w.accountID, "smtp", row.SMTPSecret); err != nil || p != "smtp-secret" {
			t.Errorf("SMTP secret opens to %q, %v", p, err)
		}
		if p, err := box.Open(w.accountID, "imap", row.IMAPSecret); err != nil || p != "imap-secret" {
			t.Errorf("IMAP secret opens to %q, %v", p, err)
		}

		list, err := impl.ListMailAccounts(ctx, e.db, w.accountID)
		if err != nil || len(list) != 1 {
			t.Fatalf("list %+v, %v", list, err)
		}
		a := list[0]
		if a.ID != id || a.UserID != w.member.id || a.SMTP != "starttls://member@acme.example@smtp.acme.example:587" || !a.SMTPPassword ||
			a.IMAP != "tls://member@imap.acme.example:993" || !a.IMAPPassword || !a.Active {
			t.Errorf("listed %+v", a)
		}

		if err := impl.DisableMailAccount(ctx, e.db, id); err != nil {
			t.Fatal(err)
		}
		if err := impl.DisableMailAccount(ctx, e.db, id); err == nil || err.Error() != "mail account "+itoa(id)+" is already disabled" {
			t.Errorf("disabled twice: %v", err)
		}
		if err := impl.DisableMailAccount(ctx, e.db, 987654321); err == nil || err.Error() != "no mail account 987654321" {
			t.Errorf("disabled a missing mail account: %v", err)
		}
		if list, err := impl.ListMailAccounts(ctx, e.db, 987654321); err == nil || err.Error() != "no account 987654321" {
			t.Errorf("listed the mail accounts of a missing account: %v, %v", list, err)
		}
		if list, _ := impl.ListMailAccounts(ctx, e.db, w.accountID); list[0].Active {
			t.Error("still active")
		}
	})

	t.Run("OK: an unauthenticated relay needs no key", func(t *testing.T) {
		if _, err := impl.CreateMailAccount(ctx, e.db, nil, impl.MailAccountInput{
			UserID: w.peer.id, Address: "peer@acme.example", SMTP: impl.MailServerInput{Host: "relay.acme.example", Port: 25, Security: "none"},
		}); err != nil {
			t.Fatal(err)
		}
	})

	before := e.count(t, `SELECT count(*) FROM mail_accounts`)
	for _, tc := range []struct {
		name string
		box  *mailer.SecretBox
		in   impl.MailAccountInput
		want string
	}{
		{"a password without a key", nil, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example",
			SMTP: impl.MailServerInput{Host: "h.example", Password: "p"}}, mailer.SecretKeyEnv + " is not set"},
		{"a password in clear over the network", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example",
			IMAP: impl.MailServerInput{Host: "h.example", Security: "none", Password: "p"}}, "would cross the network unencrypted"},
		{"IMAP without a password", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example",
			IMAP: impl.MailServerInput{Host: "h.example"}}, "IMAP needs a password"},
		{"a bad address", box, impl.MailAccountInput{UserID: w.member.id, Address: "a b@acme.example"}, "local@domain.tld"},
		{"a display name with a line break", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example", DisplayName: "A\r\nBcc: x@y.example"}, "line breaks"},
		{"an unknown security", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example", SMTP: impl.MailServerInput{Host: "h", Security: "ssl"}}, `"ssl"`},
		{"a bad port", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example", SMTP: impl.MailServerInput{Host: "h", Port: 70000}}, "port 70000"},
		{"a login without a host", box, impl.MailAccountInput{UserID: w.member.id, Address: "a@acme.example", SMTP: impl.MailServerInput{Login: "x"}}, "without a host"},
		{"an unknown user", box, impl.MailAccountInput{UserID: 987654321, Address: "a@acme.example"}, "no user 987654321"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := impl.CreateMailAccount(ctx, e.db, tc.box, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
			if n := e.count(t, `SELECT count(*) FROM mail_accounts`); n != before {
				t.Error("a mail account was stored")
			}
		})
	}
}
