package impl

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"sync"

	"github.com/crmservice/crm/gen"
)

// Go's HTTP server answers a request it cannot parse before any handler sees
// it: headers larger than MaxHeaderBytes get "431 Request Header Fields Too
// Large", a malformed request line or header (a NUL inside Authorization, a
// path with a bad %-escape) "400 Bad Request", an unknown transfer coding
// "501", each as plain text written straight to the connection. EnvelopeListener
// turns those replies into envelopes (openapi.yaml, info.description, "HTTP
// status"), keeping their HTTP status, except that a malformed Authorization
// header is answered as any other bad token: 401 with WWW-Authenticate.

// goErrorHeaders are the headers Go writes after the status line of those
// replies, and nothing else does: the replies of this server are envelopes.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxHeadCapture bounds the part of a request's head a connection keeps to
// tell whether its Authorization header was the one at fault.
const maxHeadCapture = 72 << 10

// EnvelopeListener wraps ln so that the plain-text replies Go's HTTP server
// writes itself become envelopes.
func EnvelopeListener(ln net.Listener) net.Listener { return envelopeListener{ln} }

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{Conn: c, capturing: true}, nil
}

// envelopeConn keeps the head of the request being read (until its blank
// line) and rewrites Go's own error replies.
type envelopeConn struct {
	net.Conn
	mu        sync.Mutex
	head      []byte
	capturing bool
	badAuth   bool   // the head just read has a malformed Authorization header
	requestID string // its well-formed X-Request-Id, or ""
}

func (c *envelopeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.capturing {
			c.head = append(c.head, p[:n]...)
			if end := bytes.Index(c.head, []byte("\r\n\r\n")); end >= 0 || len(c.head) > maxHeadCapture {
				c.badAuth, c.requestID = badAuthorization(c.head), headRequestID(c.head)
				c.capturing, c.head = false, nil
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *envelopeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	badAuth, id := c.badAuth, c.requestID
	if c.capturing {
		badAuth, id = badAuthorization(c.head), headRequestID(c.head)
	}
	c.head, c.capturing, c.badAuth, c.requestID = nil, true, false, "" // the next request's head follows this reply
	c.mu.Unlock()
	status, ok := goErrorStatus(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if id == "" {
		id = newRequestID()
	}
	if _, err := c.Conn.Write(goErrorEnvelope(status, badAuth, id)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// goErrorStatus recognises a reply that Go's server wrote itself and returns its status.
func goErrorStatus(p []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 3 || !bytes.Contains(p, []byte(goErrorHeaders)) {
		return 0, false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, false
	}
	return status, true
}

// goErrorEnvelope is the whole HTTP reply that replaces Go's plain one; it
// carries X-Request-Id as every reply does (requestID: the client's own, or one
// made for it).
func goErrorEnvelope(status int, badAuth bool, requestID string) []byte {
	code, msg, extra := "400", "malformed request: the request line or a header could not be parsed", ""
	switch {
	case status == 431:
		code, msg = "400", "request headers are too large"
	case status == 501:
		code, msg = "400", "unsupported transfer encoding"
	case badAuth:
		status, code, msg = 401, "401", "malformed Authorization header"
		extra = "WWW-Authenticate: Bearer error=\"invalid_token\", error_description=\"" + msg + "\"\r\n"
	}
	body, _ := json.Marshal(envelope(gen.StatusError, &code, msg, ""))
	body = append(body, '\n')
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + statusText(status) + "\r\n")
	b.WriteString("Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n")
	b.WriteString(RequestIDHeader + ": " + requestID + "\r\n")
	b.WriteString(extra)
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

func statusText(status int) string {
	switch status {
	case 401:
		return "Unauthorized"
	case 431:
		return "Request Header Fields Too Large"
	case 501:
		return "Not Implemented"
	}
	return "Bad Request"
}

// headRequestID is the X-Request-Id of the captured head when it is one the
// server takes as it is (validRequestID), or "".
func headRequestID(head []byte) string {
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte(RequestIDHeader)) {
			if id := string(bytes.TrimSpace(value)); validRequestID(id) {
				return id
			}
			return ""
		}
	}
	return ""
}

// badAuthorization reports whether the captured head has an Authorization
// header whose value holds a byte a header value may not (a control
// character other than tab, such as NUL).
func badAuthorization(head []byte) bool {
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), []byte("Authorization")) {
			continue
		}
		value = bytes.TrimSuffix(value, []byte("\r"))
		for _, b := range value {
			if (b < 0x20 && b != '\t') || b == 0x7f {
				return true
			}
		}
	}
	return false
}
