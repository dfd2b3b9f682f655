package mailer_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

func imapServer(s *mailertest.IMAPServer) mailer.Server {
	return mailer.Server{Host: s.Host, Port: s.Port, Security: "none", Login: s.Login, Password: s.Password}
}

func openInbox(t *testing.T, srv mailer.Server) *mailer.Inbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	in, err := (&mailer.Dialer{}).OpenInbox(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

func numbered(k int, body string) string {
	return fmt.Sprintf("From: a@x.example\nTo: member@acme.example\nSubject: n%d\nMessage-ID: <n%d@x.example>\n\n%s", k, k, body)
}

func TestInbox(t *testing.T) {
	s := mailertest.NewIMAPServer(t, "member@acme.example", "imap pass")

	t.Run("OK: an empty INBOX", func(t *testing.T) {
		in := openInbox(t, imapServer(s))
		if uids, err := in.UIDsAbove(0); err != nil || len(uids) != 0 || in.UIDValidity == 0 {
			t.Errorf("UIDs %v (%v), UIDVALIDITY %d", uids, err, in.UIDValidity)
		}
	})

	for k := 1; k <= 3; k++ {
		s.Deliver(t, numbered(k, "hello\n"))
	}
	t.Run("OK: UIDs above the last seen, and the messages fetched in order", func(t *testing.T) {
		in := openInbox(t, imapServer(s))
		if uids, err := in.UIDsAbove(0); err != nil || !slices.Equal(uids, []uint32{1, 2, 3}) {
			t.Errorf("UIDs above 0: %v (%v)", uids, err)
		}
		if uids, err := in.UIDsAbove(2); err != nil || !slices.Equal(uids, []uint32{3}) {
			t.Errorf("UIDs above 2: %v (%v)", uids, err)
		}
		if uids, err := in.UIDsAbove(3); err != nil || len(uids) != 0 {
			t.Errorf("UIDs above the highest: %v (%v)", uids, err)
		}
		got, err := in.Fetch([]uint32{3, 1}, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].UID != 1 || got[1].UID != 3 || got[0].HeaderOnly || got[0].Arrived.IsZero() ||
			string(got[0].Raw) != mailertest.CRLF(numbered(1, "hello\n")) {
			t.Errorf("fetched %+v", got)
		}
	})

	t.Run("OK: a message over the size limit comes with its header only", func(t *testing.T) {
		s.Deliver(t, `From: a@x.example
Subject: big
Message-ID: <big@x.example>
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

`+strings.Repeat("padding\n", 200)+`
--b
Content-Type: application/pdf
Content-Disposition: attachment; filename=a.pdf

JVBERi0xLjQK
--b--
`)
		in := openInbox(t, imapServer(s))
		got, err := in.Fetch([]uint32{1, 4}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].HeaderOnly || !got[1].HeaderOnly || !got[1].Attachment || strings.Contains(string(got[1].Raw), "padding") {
			t.Fatalf("fetched %+v", got)
		}
		if m := got[1].Message(); m.Subject != "big" || m.MessageID != "<big@x.example>" || !m.Attachment || m.HTML != "" || !m.Date.Equal(got[1].Arrived) {
			t.Errorf("header-only message read as %+v", m)
		}
	})

	t.Run("a new UIDVALIDITY after the INBOX is renumbered", func(t *testing.T) {
		before := openInbox(t, imapServer(s)).UIDValidity
		s.Renumber(t)
		if after := openInbox(t, imapServer(s)).UIDValidity; after == before {
			t.Errorf("UIDVALIDITY stayed %d", after)
		}
	})

	t.Run("a wrong password fails the login", func(t *testing.T) {
		srv := imapServer(s)
		srv.Password = "wrong"
		_, err := (&mailer.Dialer{}).OpenInbox(context.Background(), srv)
		if err == nil || !strings.HasPrefix(err.Error(), "login:") {
			t.Errorf("err %v", err)
		}
	})

	t.Run("a password in clear over the network is refused without connecting", func(t *testing.T) {
		_, err := (&mailer.Dialer{}).OpenInbox(context.Background(), mailer.Server{Host: "imap.example.com", Port: 143, Security: "none", Login: "a", Password: "p"})
		if err == nil || err.Error() != "the password would cross the network unencrypted (imap_security none)" {
			t.Errorf("err %v", err)
		}
	})
}

// TestInboxDroppedConnection cuts the connection inside a fetched body: Fetch
// fails (it neither hangs, nor panics, nor races with the client's reader).
func TestInboxDroppedConnection(t *testing.T) {
	s := mailertest.NewIMAPServer(t, "member@acme.example", "imap pass")
	line := strings.Repeat("0123456789", 10) + "\n"
	for k := range 10 {
		s.Deliver(t, numbered(k, strings.Repeat(line, 30)))
	}
	proxy := mailertest.NewDropProxy(t, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
	srv := imapServer(s)
	srv.Port = proxy.Port
	in := openInbox(t, srv)
	uids, err := in.UIDsAbove(0)
	if err != nil || len(uids) != 10 {
		t.Fatalf("UIDs %v (%v)", uids, err)
	}
	in.Close()

	for _, cut := range []int64{1, 2_000, 9_000, 20_000} {
		t.Run(fmt.Sprintf("after %d bytes", cut), func(t *testing.T) {
			proxy.DropAfter.Store(cut)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			in, err := (&mailer.Dialer{}).OpenInbox(ctx, srv)
			if err != nil {
				return // cut before the INBOX was selected
			}
			defer in.Close()
			if got, err := in.Fetch(uids, 1<<20); err == nil {
				t.Errorf("fetched %d messages over a cut connection", len(got))
			}
			if ctx.Err() != nil {
				t.Error("Fetch waited for the timeout")
			}
		})
	}
}
