package impl_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"log"
	"math/big"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/crmservice/crm/impl"
)

// Mail test helpers: an SMTP server and an IMAP server in the test process,
// listening on loopback, a proxy that drops connections, a test key and mail
// accounts.

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// testSecretBox is a SecretBox with a fresh random key.
func testSecretBox(t *testing.T) *impl.SecretBox {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := impl.NewSecretBox(base64.StdEncoding.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// sunkMail is a message an smtpSink accepted.
type sunkMail struct {
	from  string
	rcpts []string
	raw   []byte
}

// smtpSink is an SMTP server on loopback that keeps what it accepts. Its
// behaviour can be changed while it runs.
type smtpSink struct {
	host string
	port int
	srv  *smtp.Server

	mu        sync.Mutex
	accepted  []sunkMail
	logins    []string // login:password of each successful AUTH
	dataCalls int
	// dataReply, when set, answers the n-th DATA (from 1): nil accepts.
	dataReply func(n int) error
	// rcptReply, when set, answers each RCPT TO.
	rcptReply func(to string) error
}

type sinkOptions struct {
	login, password string // AUTH PLAIN required with these
	tls             string // "", "starttls" or "tls"
	cert            *tls.Certificate
}

func newSMTPSink(t *testing.T, opts sinkOptions) *smtpSink {
	t.Helper()
	s := &smtpSink{}
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
	switch opts.tls {
	case "starttls":
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*opts.cert}}
	case "tls":
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*opts.cert}})
	}
	s.host, s.port = "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *smtpSink) mails() []sunkMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sunkMail(nil), s.accepted...)
}

func (s *smtpSink) set(f func(s *smtpSink)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

type sinkSession struct {
	sink   *smtpSink
	opts   sinkOptions
	authed bool
	from   string
	rcpts  []string
}

func (ss *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *sinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, login, password string) error {
		if login != ss.opts.login || password != ss.opts.password {
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
	if ss.opts.login != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.sink.mu.Lock()
	reply := ss.sink.rcptReply
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
	if ss.sink.dataReply != nil {
		if err := ss.sink.dataReply(ss.sink.dataCalls); err != nil {
			return err
		}
	}
	ss.sink.accepted = append(ss.sink.accepted, sunkMail{from: ss.from, rcpts: ss.rcpts, raw: raw})
	return nil
}

func (ss *sinkSession) Reset()        { ss.from, ss.rcpts = "", nil }
func (ss *sinkSession) Logout() error { return nil }

// testCert is a self-signed certificate for 127.0.0.1 and the pool that trusts it.
func testCert(t *testing.T) (*tls.Certificate, *x509.CertPool) {
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

// imapTestServer is go-imap's in-memory IMAP server on loopback with one user.
type imapTestServer struct {
	host     string
	port     int
	user     *imapmemserver.User
	login    string
	password string
}

func newIMAPServer(t *testing.T, login, password string) *imapTestServer {
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
	return &imapTestServer{host: "127.0.0.1", port: ln.Addr().(*net.TCPAddr).Port, user: user, login: login, password: password}
}

// deliver appends a raw message (LF or CRLF line ends) to the INBOX.
func (s *imapTestServer) deliver(t *testing.T, raw string) {
	t.Helper()
	raw = crlf(raw)
	if _, err := s.user.Append("INBOX", bytes.NewReader([]byte(raw)), &imap.AppendOptions{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func crlf(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dropProxy forwards TCP connections to target and can cut them: after
// dropAfter bytes from the server (0: never).
type dropProxy struct {
	port      int
	dropAfter atomic.Int64
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{port: ln.Addr().(*net.TCPAddr).Port}
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

func (p *dropProxy) serve(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	limit := p.dropAfter.Load()
	go func() { _, _ = io.Copy(server, client); server.Close() }()
	var r io.Reader = server
	if limit > 0 {
		r = io.LimitReader(server, limit)
	}
	_, _ = io.Copy(client, r)
}

// mailAccount creates a mail account for user with the given servers.
func mailAccount(t *testing.T, e *env, box *impl.SecretBox, userID int64, address string, smtpSrv, imapSrv impl.MailServerInput) int64 {
	t.Helper()
	id, err := impl.CreateMailAccount(context.Background(), e.db, box, impl.MailAccountInput{
		UserID: userID, Address: address, DisplayName: "Box " + address, SMTP: smtpSrv, IMAP: imapSrv,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newWorker is a mail worker for tests: short timeouts, a one-minute backoff
// base (tests make a retry due by moving next_attempt_at) and 3 attempts.
func newWorker(t *testing.T, e *env, box *impl.SecretBox, opts ...func(*impl.MailConfig)) *impl.MailWorker {
	t.Helper()
	cfg := impl.MailConfig{DB: e.db, Secrets: box, Timeout: 3 * time.Second, Lease: 10 * time.Second,
		MaxAttempts: 3, RetryBase: time.Minute, RetryMax: time.Hour, PollInterval: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := impl.NewMailWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func deliverAll(t *testing.T, w *impl.MailWorker) int {
	t.Helper()
	total := 0
	for {
		n, err := w.DeliverOutbox(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

func smtpServer(s *smtpSink, security string) impl.MailServerInput {
	return impl.MailServerInput{Host: s.host, Port: s.port, Security: security}
}

func imapServer(s *imapTestServer) impl.MailServerInput {
	return impl.MailServerInput{Host: s.host, Port: s.port, Security: "none", Login: s.login, Password: s.password}
}

// sendMail posts POST /mail/send and expects the success envelope.
func sendMail(t *testing.T, e *env, token string, mail map[string]any) {
	t.Helper()
	r := e.post(t, token, "/mail/send", map[string]any{"mail": mail})
	if r.Status != "success" || r.code() != "0" || r.errorText() != "" || r.Value != "" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
		t.Fatalf("mail/send: want success with code 0, got\n%s", r.Raw)
	}
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
