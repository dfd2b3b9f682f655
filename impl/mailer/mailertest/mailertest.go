// Package mailertest runs mail servers inside a test process, on loopback: an
// SMTP server that keeps what it accepts, go-imap's in-memory IMAP server,
// a TCP proxy that cuts connections, and a self-signed certificate. The tests
// of package mailer and of package impl use them; servers stop when the test
// ends.
package mailertest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is a message an SMTPSink accepted.
type Mail struct {
	From  string
	Rcpts []string
	Raw   []byte
}

// SinkOptions shape an SMTPSink.
type SinkOptions struct {
	Login, Password string           // AUTH PLAIN required with these
	TLS             string           // "", "starttls" or "tls"
	Cert            *tls.Certificate // for TLS
}

// SMTPSink is an SMTP server on loopback that keeps what it accepts. Its
// replies can be changed while it runs (Set).
type SMTPSink struct {
	Host string
	Port int
	srv  *smtp.Server

	mu        sync.Mutex
	accepted  []Mail
	logins    []string // login:password of each successful AUTH
	dataCalls int
	// DataReply, when set, answers the n-th DATA (from 1): nil accepts.
	DataReply func(n int) error
	// RcptReply, when set, answers each RCPT TO: nil accepts.
	RcptReply func(to string) error
}

// NewSMTPSink starts an SMTPSink.
func NewSMTPSink(t testing.TB, opts SinkOptions) *SMTPSink {
	t.Helper()
	s := &SMTPSink{}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{sink: s, opts: opts}, nil
	}))
	s.srv.Domain = "sink.test"
	s.srv.AllowInsecureAuth = true
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch opts.TLS {
	case "starttls":
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*opts.Cert}}
	case "tls":
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*opts.Cert}})
	}
	s.Host, s.Port = "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// Mails are the messages accepted so far.
func (s *SMTPSink) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.accepted...)
}

// Logins are the login:password of each successful AUTH so far.
func (s *SMTPSink) Logins() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.logins...)
}

// Set changes the sink under its lock (DataReply, RcptReply).
func (s *SMTPSink) Set(f func(s *SMTPSink)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

type sinkSession struct {
	sink   *SMTPSink
	opts   SinkOptions
	authed bool
	from   string
	rcpts  []string
}

func (ss *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *sinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, login, password string) error {
		if login != ss.opts.Login || password != ss.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		ss.authed = true
		ss.sink.mu.Lock()
		ss.sink.logins = append(ss.sink.logins, login+":"+password)
		ss.sink.mu.Unlock()
		return nil
	}), nil
}

func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	if ss.opts.Login != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.sink.mu.Lock()
	reply := ss.sink.RcptReply
	ss.sink.mu.Unlock()
	if reply != nil {
		if err := reply(to); err != nil {
			return err
		}
	}
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.sink.mu.Lock()
	defer ss.sink.mu.Unlock()
	ss.sink.dataCalls++
	if ss.sink.DataReply != nil {
		if err := ss.sink.DataReply(ss.sink.dataCalls); err != nil {
			return err
		}
	}
	ss.sink.accepted = append(ss.sink.accepted, Mail{From: ss.from, Rcpts: ss.rcpts, Raw: raw})
	return nil
}

func (ss *sinkSession) Reset()        { ss.from, ss.rcpts = "", nil }
func (ss *sinkSession) Logout() error { return nil }

// Cert is a self-signed certificate for 127.0.0.1 and localhost, with the
// pool of roots that trusts it.
func Cert(t testing.TB) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// IMAPServer is go-imap's in-memory IMAP server on loopback with one user
// and an INBOX, without TLS.
type IMAPServer struct {
	Host     string
	Port     int
	User     *imapmemserver.User
	Login    string
	Password string
}

// NewIMAPServer starts an IMAPServer for the user login.
func NewIMAPServer(t testing.TB, login, password string) *IMAPServer {
	t.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser(login, password)
	if err := user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(user)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       log.New(io.Discard, "", 0),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &IMAPServer{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, User: user, Login: login, Password: password}
}

// Deliver appends a raw message (LF or CRLF line ends) to the INBOX.
func (s *IMAPServer) Deliver(t testing.TB, raw string) {
	t.Helper()
	if _, err := s.User.Append("INBOX", bytes.NewReader([]byte(CRLF(raw))), &imap.AppendOptions{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// Renumber deletes and creates the INBOX again, empty and under a new
// UIDVALIDITY.
func (s *IMAPServer) Renumber(t testing.TB) {
	t.Helper()
	if err := s.User.Delete("INBOX"); err != nil {
		t.Fatal(err)
	}
	if err := s.User.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
}

// CRLF makes every line end of s CRLF.
func CRLF(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// DropProxy forwards TCP connections on loopback to a target and can cut them.
type DropProxy struct {
	Port int
	// DropAfter cuts each new connection after that many bytes from the
	// server (0: never).
	DropAfter atomic.Int64
}

// NewDropProxy starts a DropProxy to target (host:port).
func NewDropProxy(t testing.TB, target string) *DropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &DropProxy{Port: ln.Addr().(*net.TCPAddr).Port}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(client, target)
		}
	}()
	return p
}

func (p *DropProxy) serve(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	limit := p.DropAfter.Load()
	go func() { _, _ = io.Copy(server, client); server.Close() }()
	var r io.Reader = server
	if limit > 0 {
		r = io.LimitReader(server, limit)
	}
	_, _ = io.Copy(client, r)
}

// SilentServer is a port on loopback that accepts connections and never says
// a word: a mail server too slow to answer.
func SilentServer(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// ClosedPort is a port on loopback where nothing listens.
func ClosedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
