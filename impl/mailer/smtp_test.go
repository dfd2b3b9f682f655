package mailer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

// send delivers a small message through d to srv within a few seconds.
func send(t *testing.T, d *mailer.Dialer, srv mailer.Server, rcpts ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rcpts == nil {
		rcpts = []string{"janis@contoso.example"}
	}
	return d.Send(ctx, srv, "member@acme.example", rcpts, []byte(mailertest.CRLF("Subject: x\n\nhello\n")))
}

func TestSend(t *testing.T) {
	t.Run("OK: the envelope and the bytes as given", func(t *testing.T) {
		sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
		err := send(t, &mailer.Dialer{}, mailer.Server{Host: sink.Host, Port: sink.Port, Security: "none"}, "a@x.example", "b@y.example")
		if err != nil {
			t.Fatal(err)
		}
		mails := sink.Mails()
		if len(mails) != 1 || mails[0].From != "member@acme.example" || !slices.Equal(mails[0].Rcpts, []string{"a@x.example", "b@y.example"}) ||
			!bytes.Equal(mails[0].Raw, []byte("Subject: x\r\n\r\nhello\r\n")) {
			t.Errorf("arrived %+v", mails)
		}
	})

	t.Run("OK: AUTH PLAIN over STARTTLS and over TLS", func(t *testing.T) {
		cert, roots := mailertest.Cert(t)
		for _, security := range []string{"starttls", "tls"} {
			t.Run(security, func(t *testing.T) {
				sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{Login: "member", Password: "s3cret pass", TLS: security, Cert: cert})
				d := &mailer.Dialer{TLSConfig: &tls.Config{RootCAs: roots}}
				if err := send(t, d, mailer.Server{Host: sink.Host, Port: sink.Port, Security: security, Login: "member", Password: "s3cret pass"}); err != nil {
					t.Fatal(err)
				}
				if len(sink.Mails()) != 1 || !slices.Equal(sink.Logins(), []string{"member:s3cret pass"}) {
					t.Errorf("arrived %d, logins %v", len(sink.Mails()), sink.Logins())
				}
			})
		}
	})

	cert, _ := mailertest.Cert(t)
	for _, tc := range []struct {
		name      string
		server    func(t *testing.T) mailer.Server
		permanent bool
		reason    string // the whole reason, or "~" and a part of it
	}{
		{"an untrusted certificate is temporary", func(t *testing.T) mailer.Server {
			sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{TLS: "tls", Cert: cert})
			return mailer.Server{Host: sink.Host, Port: sink.Port, Security: "tls"}
		}, false, "~certificate"},
		{"a 4xx reply is temporary", func(t *testing.T) mailer.Server {
			sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
			sink.Set(func(s *mailertest.SMTPSink) {
				s.DataReply = func(int) error {
					return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
				}
			})
			return mailer.Server{Host: sink.Host, Port: sink.Port, Security: "none"}
		}, false, "SMTP error 451: try again later"},
		{"a 5xx reply to a recipient is permanent", func(t *testing.T) mailer.Server {
			sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{})
			sink.Set(func(s *mailertest.SMTPSink) {
				s.RcptReply = func(string) error {
					return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
				}
			})
			return mailer.Server{Host: sink.Host, Port: sink.Port, Security: "none"}
		}, true, "SMTP error 550: no such mailbox"},
		{"bad credentials are permanent", func(t *testing.T) mailer.Server {
			sink := mailertest.NewSMTPSink(t, mailertest.SinkOptions{Login: "member", Password: "right"})
			return mailer.Server{Host: sink.Host, Port: sink.Port, Security: "none", Login: "member", Password: "wrong"}
		}, true, "SMTP error 535: bad credentials"},
		{"a server that is down is temporary", func(t *testing.T) mailer.Server {
			return mailer.Server{Host: "127.0.0.1", Port: mailertest.ClosedPort(t), Security: "none"}
		}, false, "~connection refused"},
		{"a password in clear over the network is refused without connecting", func(t *testing.T) mailer.Server {
			return mailer.Server{Host: "mail.example.com", Port: 25, Security: "none", Login: "member", Password: "p"}
		}, true, "the password would cross the network unencrypted (smtp_security none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, &mailer.Dialer{}, tc.server(t))
			if err == nil {
				t.Fatal("sent")
			}
			de := mailer.Classify(err)
			ok := de.Reason == tc.reason
			if part, found := strings.CutPrefix(tc.reason, "~"); found {
				ok = strings.Contains(de.Reason, part)
			}
			if !ok || de.Permanent != tc.permanent {
				t.Errorf("Classify = %+v, want permanent %t and %q", de, tc.permanent, tc.reason)
			}
		})
	}

	t.Run("a server that never answers times out", func(t *testing.T) {
		port := mailertest.SilentServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := (&mailer.Dialer{}).Send(ctx, mailer.Server{Host: "127.0.0.1", Port: port, Security: "none"}, "a@x.example", []string{"b@x.example"}, []byte("x"))
		err = mailer.ExplainTimeout(ctx, 300*time.Millisecond, err)
		if err == nil || !strings.HasPrefix(err.Error(), "timeout: no answer within 300ms") || mailer.Classify(err).Permanent {
			t.Errorf("err %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v", d)
		}
	})

	t.Run("a cancelled context interrupts", func(t *testing.T) {
		port := mailertest.SilentServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		err := (&mailer.Dialer{}).Send(ctx, mailer.Server{Host: "127.0.0.1", Port: port, Security: "none"}, "a@x.example", []string{"b@x.example"}, []byte("x"))
		if err = mailer.ExplainTimeout(ctx, time.Minute, err); err == nil || !strings.HasPrefix(err.Error(), "interrupted: the process is stopping") {
			t.Errorf("err %v", err)
		}
	})
}

func TestClassify(t *testing.T) {
	if de := mailer.Classify(mailer.Permanent("mail account %d is disabled", 7)); !de.Permanent || de.Reason != "mail account 7 is disabled" {
		t.Errorf("Permanent: %+v", de)
	}
	wrapped := errors.Join(errors.New("authenticate"), &smtp.SMTPError{Code: 421, Message: "busy"})
	if de := mailer.Classify(wrapped); de.Permanent || de.Reason != "SMTP error 421: busy" {
		t.Errorf("a wrapped 421: %+v", de)
	}
	if de := mailer.Classify(errors.New("read: connection reset")); de.Permanent || de.Reason != "read: connection reset" {
		t.Errorf("a network error: %+v", de)
	}
}

func TestExposesPassword(t *testing.T) {
	for _, tc := range []struct {
		security, host string
		want           bool
	}{
		{"none", "mail.example.com", true}, {"none", "192.0.2.1", true}, {"none", "127.0.0.1", false}, {"none", "::1", false},
		{"none", "localhost", false}, {"starttls", "mail.example.com", false}, {"tls", "mail.example.com", false},
	} {
		if got := mailer.ExposesPassword(tc.security, tc.host); got != tc.want {
			t.Errorf("ExposesPassword(%q, %q) = %t", tc.security, tc.host, got)
		}
	}
}
