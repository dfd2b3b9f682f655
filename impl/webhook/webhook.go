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
// public destinations. The IPv6 ranges that embed an IPv4 address are not
// here: such an address is judged by the IPv4 addresses inside (embeddedIPv4).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Prefixes of the IPv6 forms that carry an IPv4 address (embeddedIPv4).
var (
	mappedPrefix     = netip.MustParsePrefix("::ffff:0:0/96")   // IPv4-mapped
	compatPrefix     = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated), :: and ::1 included
	translatedPrefix = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT, RFC 2765)
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")    // NAT64, well-known prefix (RFC 6052)
	nat64LocalPrefix = netip.MustParsePrefix("64:ff9b:1::/48")  // NAT64, local use (RFC 8215)
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")       // 6to4 (RFC 3056)
	teredoPrefix     = netip.MustParsePrefix("2001::/32")       // Teredo (RFC 4380)
)

// embeddedIPv4 returns the IPv4 addresses that a connection to the IPv6
// address a may reach through a translator, a tunnel or a dual stack, by the
// forms that carry one: IPv4-mapped, IPv4-compatible and IPv4-translated
// (the last 32 bits); NAT64 with the well-known prefix (the last 32 bits) and
// with a local-use prefix, whose length is the operator's (each position RFC
// 6052 defines for a prefix of 48, 56, 64 or 96 bits); 6to4 (bits 16–47);
// Teredo (the server, bits 32–63, and the client, the last 32 bits
// inverted); and an ISATAP interface identifier (::0:5efe:a.b.c.d or
// ::200:5efe:a.b.c.d, under any prefix). It returns none for an address of no
// such form.
func embeddedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(p0, p1, p2, p3 byte) netip.Addr { return netip.AddrFrom4([4]byte{p0, p1, p2, p3}) }
	last := v4(b[12], b[13], b[14], b[15])
	switch {
	case mappedPrefix.Contains(a), compatPrefix.Contains(a), translatedPrefix.Contains(a), nat64Prefix.Contains(a):
		return []netip.Addr{last}
	case nat64LocalPrefix.Contains(a):
		// RFC 6052, 2.2: the octet at bits 64–71 is skipped.
		return []netip.Addr{last, v4(b[9], b[10], b[11], b[12]), v4(b[7], b[9], b[10], b[11]), v4(b[6], b[7], b[9], b[10])}
	case sixToFourPrefix.Contains(a):
		return []netip.Addr{v4(b[2], b[3], b[4], b[5])}
	case teredoPrefix.Contains(a):
		return []netip.Addr{v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15])}
	case (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe:
		return []netip.Addr{last} // ISATAP (RFC 5214, 6.1)
	}
	return nil
}

// Allowed reports whether a connection to addr may be made: addr is in an
// allowed network, or it is a public address. An IPv6 address that embeds
// IPv4 addresses (embeddedIPv4) is judged by them too: allowed only when each
// is in an allowed network or public.
func (g *Guard) Allowed(addr netip.Addr) bool {
	return g.refusedAs(addr) == (netip.Addr{})
}

// refusedAs is the address for which a connection to addr is refused: addr
// itself or an IPv4 address it embeds; the zero Addr when it is allowed.
func (g *Guard) refusedAs(addr netip.Addr) netip.Addr {
	addr = addr.WithZone("")
	if g.inAllowed(addr) {
		return netip.Addr{}
	}
	for _, a := range embeddedIPv4(addr) {
		if !g.inAllowed(a) && !public(a) {
			return a
		}
	}
	// The address's own form too: an ISATAP identifier under a link-local
	// prefix is no public destination, whatever it embeds.
	if !public(addr) {
		return addr
	}
	return netip.Addr{}
}

// inAllowed reports whether addr is in one of the operator's allowed networks.
func (g *Guard) inAllowed(addr netip.Addr) bool {
	for _, p := range g.allowed {
		if p.Contains(addr) || p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// public reports whether addr is a public address of the internet, by its own
// form (embedded addresses aside).
func public(addr netip.Addr) bool {
	a := addr.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// RefusedError is the refusal of a destination address.
type RefusedError struct {
	Addr netip.Addr
	// Embedded, when valid, is the IPv4 address inside Addr that is refused.
	Embedded netip.Addr
}

func (e *RefusedError) Error() string {
	const why = " is a private, loopback, link-local or otherwise non-public address"
	if e.Embedded.IsValid() {
		return e.Addr.String() + " embeds the IPv4 address " + e.Embedded.String() + ", which" + why
	}
	return e.Addr.String() + why
}

// refusal is the RefusedError of addr, or nil when it is allowed.
func (g *Guard) refusal(addr netip.Addr) error {
	bad := g.refusedAs(addr)
	switch {
	case !bad.IsValid():
		return nil
	case bad != addr.WithZone(""):
		return &RefusedError{Addr: addr, Embedded: bad}
	}
	return &RefusedError{Addr: addr}
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
		return g.refusal(a)
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
		if err := g.refusal(a); err != nil {
			return err
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
			return g.refusal(ap.Addr())
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
