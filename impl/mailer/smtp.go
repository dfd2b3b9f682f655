package mailer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Server is the SMTP or IMAP side of a mail account: where to connect, how the
// connection is secured (none, starttls or tls), and the login with its
// password in clear ("" for an SMTP relay that needs none).
type Server struct {
	Host     string
	Port     int
	Security string
	Login    string
	Password string
}

// Dialer connects to mail servers. A connection ends when the context of the
// call that opened it ends, and times out at its deadline.
type Dialer struct {
	// TLSConfig holds the roots that verify mail servers (nil: the system's).
	TLSConfig *tls.Config
}

// ExposesPassword reports whether a password sent to host under security
// would cross a network unencrypted: security none to a host other than this
// machine.
func ExposesPassword(security, host string) bool {
	if security != "none" {
		return false
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// DeliveryError is a failed delivery attempt with the reason to keep: the
// server's reply, or what went wrong on the way. A permanent failure is not
// worth another attempt.
type DeliveryError struct {
	Permanent bool
	Reason    string
}

func (e *DeliveryError) Error() string { return e.Reason }

// Permanent returns a permanent DeliveryError with the reason.
func Permanent(format string, args ...any) error {
	return &DeliveryError{Permanent: true, Reason: fmt.Sprintf(format, args...)}
}

// Classify tells a permanent failure (an SMTP 5xx reply, a Permanent error)
// from a temporary one (an SMTP 4xx reply, the network, a timeout, anything
// else).
func Classify(err error) *DeliveryError {
	var de *DeliveryError
	if errors.As(err, &de) {
		return de
	}
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return &DeliveryError{Permanent: se.Code/100 == 5, Reason: se.Error()}
	}
	return &DeliveryError{Reason: err.Error()}
}

// ExplainTimeout names the cause of an error that the end of ctx caused: the
// timeout (the deadline set by the caller as now + timeout), or the process
// stopping.
func ExplainTimeout(ctx context.Context, timeout time.Duration, err error) error {
	if err == nil {
		return nil
	}
	// A connection's deadline is ctx's: its read can fail a moment before
	// ctx.Err() says why.
	deadline, ok := ctx.Deadline()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), ok && !time.Now().Before(deadline):
		return fmt.Errorf("timeout: no answer within %s (%w)", timeout, err)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: the process is stopping (%w)", err)
	}
	return err
}

// Send delivers the MIME text raw from the envelope sender from to rcpts over
// srv, authenticating (PLAIN, else LOGIN) when srv has a login. Each command
// waits until ctx's deadline at most; set one.
func (d *Dialer) Send(ctx context.Context, srv Server, from string, rcpts []string, raw []byte) error {
	if srv.Login != "" && ExposesPassword(srv.Security, srv.Host) {
		return Permanent("the password would cross the network unencrypted (smtp_security none)")
	}
	conn, err := d.dial(ctx, srv)
	if err != nil {
		return err
	}
	defer conn.Close()
	var c *smtp.Client
	switch srv.Security {
	case "tls":
		c = smtp.NewClient(tls.Client(conn, d.tlsConfig(srv.Host)))
	case "starttls":
		if c, err = smtp.NewClientStartTLS(conn, d.tlsConfig(srv.Host)); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	default:
		c = smtp.NewClient(conn)
	}
	defer c.Close()
	if deadline, ok := ctx.Deadline(); ok {
		c.CommandTimeout = time.Until(deadline)
		c.SubmissionTimeout = c.CommandTimeout
	}
	if srv.Login != "" {
		var auth sasl.Client = sasl.NewPlainClient("", srv.Login, srv.Password)
		if !c.SupportsAuth(sasl.Plain) && c.SupportsAuth(sasl.Login) {
			auth = sasl.NewLoginClient(srv.Login, srv.Password)
		}
		if err := c.Auth(auth); err != nil {
			return fmt.Errorf("authenticate: %w", err)
		}
	}
	if err := c.SendMail(from, rcpts, bytes.NewReader(raw)); err != nil {
		return err
	}
	_ = c.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

// dial connects to srv; the connection is closed when ctx ends and times out
// at ctx's deadline.
func (d *Dialer) dial(ctx context.Context, srv Server) (net.Conn, error) {
	nd := net.Dialer{Timeout: 30 * time.Second}
	conn, err := nd.DialContext(ctx, "tcp", net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port)))
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return &stoppingConn{Conn: conn, stop: stop}, nil
}

// stoppingConn releases the context watch of dial when it is closed.
type stoppingConn struct {
	net.Conn
	stop func() bool
	once sync.Once
}

func (c *stoppingConn) Close() error {
	c.once.Do(func() { c.stop() })
	return c.Conn.Close()
}

func (d *Dialer) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if d.TLSConfig != nil {
		cfg = d.TLSConfig.Clone()
	}
	cfg.ServerName = host
	return cfg
}
