// Package webhook holds what delivering webhooks needs besides SQL: the
// secrets and signatures of the Standard Webhooks specification
// (https://www.standardwebhooks.com/), the refusal of destinations in private
// networks (server-side request forgery), and one signed delivery over HTTP.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SecretPrefix starts every secret: "whsec_" and the Base64 of its key.
const SecretPrefix = "whsec_"

// NewSecret returns a new random secret of 32 bytes.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// ParseSecret returns the key of a secret: whsec_ and the standard Base64 of
// 24 to 64 bytes.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("a secret starts with " + SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		if key, err = base64.RawStdEncoding.DecodeString(enc); err != nil {
			return nil, errors.New("a secret is " + SecretPrefix + " and Base64")
		}
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("a secret's key has 24 to 64 bytes, this one %d", len(key))
	}
	return key, nil
}

// Sign is the webhook-signature of a message: "v1," and the Base64 of the
// HMAC-SHA256 of "{id}.{timestamp}.{body}" under key.
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks the headers of a delivery against secret, as a receiver does:
// one of the space-separated signatures of webhook-signature must be the
// message's, and webhook-timestamp within tolerance of now.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("webhook-id or webhook-timestamp missing")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook-timestamp too far from now")
	}
	want := Sign(key, id, sec, body)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

// Guard refuses destinations that are not public addresses of the internet,
// unless they are in the operator's allowed networks.
type Guard struct {
	allowed []netip.Prefix
}

// NewGuard returns a guard that lets through, besides public addresses, those
// in allowed.
func NewGuard(allowed []netip.Prefix) *Guard { return &Guard{allowed: allowed} }

// ParseNetworks reads comma-separated CIDRs or addresses (WEBHOOK_ALLOWED_NETWORKS).
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an address", part)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// nonPublic are the special-purpose ranges, besides those netip names
// (loopback, private, link-local, multicast, unspecified), that are not
// public destinations or may lead to private ones.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: any IPv4 address, private ones too
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: an IPv4 address inside
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/32"),      // Teredo: an IPv4 address inside
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("::/128"),         // unspecified
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Allowed reports whether a connection to addr may be made.
func (g *Guard) Allowed(addr netip.Addr) bool {
	for _, p := range g.allowed {
		if p.Contains(addr) || p.Contains(addr.Unmap()) {
			return true
		}
	}
	a := addr.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) || p.Contains(addr) {
			return false
		}
	}
	return true
}

// RefusedError is the refusal of a destination address.
type RefusedError struct{ Addr netip.Addr }

func (e *RefusedError) Error() string {
	return e.Addr.String() + " is a private, loopback, link-local or otherwise non-public address"
}

// CheckURL checks a subscription's URL: http or https, a host, no user or
// password, and a host that is not, and does not resolve to, a refused
// address. A host name that does not resolve now is let through (its
// deliveries fail until it does); every delivery checks the address it dials.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("not an absolute URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("the scheme must be https or http")
	}
	if u.User != nil {
		return errors.New("a user or password in the URL is not allowed (the signature authenticates deliveries)")
	}
	if u.Fragment != "" {
		return errors.New("a fragment (#…) is not allowed")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if !g.Allowed(a) {
			return &RefusedError{a}
		}
		return nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return errors.New("localhost is not a public destination")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !g.Allowed(a) {
			return &RefusedError{a}
		}
	}
	return nil
}

// Client returns an HTTP client for deliveries: every connection's address is
// checked as it is dialed (after name resolution, so a name that resolves to
// a private address is refused too), no proxy is used, redirects are not
// followed, and a request takes at most timeout.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s: %w", address, err)
			}
			if !g.Allowed(ap.Addr()) {
				return &RefusedError{ap.Addr()}
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Message is one delivery: its webhook-id, and its JSON body.
type Message struct {
	ID   string
	Body []byte
}

// Result is the outcome of one delivery attempt.
type Result struct {
	Delivered  bool
	StatusCode int // 0: no reply
	Error      string
	Duration   time.Duration
}

// Deliver POSTs msg to target, signed with key at the time of the attempt.
// Only a 2xx reply delivers; the reply's body is read (up to 64 KiB) and
// discarded.
func Deliver(ctx context.Context, client *http.Client, target string, key []byte, msg Message) Result {
	start := time.Now()
	res := Result{}
	defer func() { res.Duration = time.Since(start) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(msg.Body))
	if err != nil {
		res.Error = "not a valid URL"
		res.Duration = time.Since(start)
		return res
	}
	ts := start.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "crm-webhooks/1")
	req.Header.Set("webhook-id", msg.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(key, msg.ID, ts, msg.Body))
	resp, err := client.Do(req)
	if err != nil {
		res.Error = describe(err)
		res.Duration = time.Since(start)
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	res.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		res.Delivered = true
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Error = fmt.Sprintf("HTTP %d: redirects are not followed", resp.StatusCode)
	default:
		res.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	res.Duration = time.Since(start)
	return res
}

// describe tells why a request got no reply, without Go's wrapping.
func describe(err error) string {
	var refused *RefusedError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &refused):
		return "refused destination: " + refused.Error()
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "the host " + dnsErr.Name + " does not resolve"
	case errors.As(err, &dnsErr):
		return "the host " + dnsErr.Name + " could not be resolved"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "no reply within the time limit"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Op + ": " + opErr.Err.Error()
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
