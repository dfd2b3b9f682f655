package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl/webhook"
)

// The example of the Standard Webhooks specification's reference libraries.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSign(t *testing.T) {
	key, err := webhook.ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := webhook.Sign(key, specID, specTimestamp, []byte(specBody)); got != specSignature {
		t.Errorf("Sign = %s, want %s", got, specSignature)
	}
}

func TestVerify(t *testing.T) {
	at := time.Unix(specTimestamp, 0)
	h := http.Header{}
	h.Set("webhook-id", specID)
	h.Set("webhook-timestamp", strconv.Itoa(specTimestamp))
	h.Set("webhook-signature", "v1,bm90IGl0 "+specSignature) // several signatures, one valid
	if err := webhook.Verify(specSecret, h, []byte(specBody), at, time.Minute); err != nil {
		t.Errorf("valid: %v", err)
	}
	if err := webhook.Verify(specSecret, h, []byte(specBody+" "), at, time.Minute); err == nil {
		t.Error("another body verified")
	}
	if err := webhook.Verify(specSecret, h, []byte(specBody), at.Add(10*time.Minute), 5*time.Minute); err == nil {
		t.Error("an old timestamp verified")
	}
	if err := webhook.Verify(webhook.NewSecret(), h, []byte(specBody), at, time.Minute); err == nil {
		t.Error("another secret verified")
	}
}

func TestParseSecret(t *testing.T) {
	s := webhook.NewSecret()
	if key, err := webhook.ParseSecret(s); err != nil || len(key) != 32 || s == webhook.NewSecret() {
		t.Errorf("NewSecret %q: %v", s, err)
	}
	for _, bad := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!!!", "whsec_QUFBQUFB", "whsec_" + strings.Repeat("QUFB", 30)} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted it", bad)
		}
	}
}

func TestGuard(t *testing.T) {
	g := webhook.NewGuard(nil)
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:2800:21f:cb07:6820:80da:af6b:8b2c": true, "8.8.8.8": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.5.5": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "255.255.255.255": false, "224.0.0.1": false, "198.18.0.1": false,
		"::1": false, "::": false, "fe80::1": false, "fc00::1": false, "fd12::1": false, "ff02::1": false,
		"fe80::1%eth0": false, "2606:2800:21f:cb07:6820:80da:af6b:8b2c%eth0": true,
	} {
		if got := g.Allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allowed(%s) = %t, want %t", addr, got, want)
		}
	}
}

// TestGuardEmbeddedIPv4 judges every IPv6 form that carries an IPv4 address
// by the address inside: refused when it is not public, allowed when it is
// (and the form itself is public).
func TestGuardEmbeddedIPv4(t *testing.T) {
	g := webhook.NewGuard(nil)
	for _, tc := range []struct {
		form, addr string
		allowed    bool
		embedded   string // the IPv4 address the refusal names ("": the address itself)
	}{
		{"IPv4-compatible, loopback", "::127.0.0.1", false, "127.0.0.1"},
		{"IPv4-compatible, private", "::10.0.0.1", false, "10.0.0.1"},
		{"IPv4-compatible, metadata", "::169.254.169.254", false, "169.254.169.254"},
		{"IPv4-compatible, public", "::8.8.8.8", true, ""},
		{"IPv4-mapped, loopback", "::ffff:127.0.0.1", false, "127.0.0.1"},
		{"IPv4-mapped, private", "::ffff:192.168.1.1", false, "192.168.1.1"},
		{"IPv4-mapped, public", "::ffff:8.8.8.8", true, ""},
		{"IPv4-translated (SIIT), loopback", "::ffff:0:127.0.0.1", false, "127.0.0.1"},
		{"IPv4-translated (SIIT), public", "::ffff:0:8.8.8.8", true, ""},
		{"NAT64, private", "64:ff9b::10.0.0.1", false, "10.0.0.1"},
		{"NAT64, loopback", "64:ff9b::7f00:1", false, "127.0.0.1"},
		{"NAT64, public", "64:ff9b::8.8.8.8", true, ""},
		{"local-use NAT64 /96, private", "64:ff9b:1::10.0.0.1", false, "10.0.0.1"},
		{"local-use NAT64 /48, private", "64:ff9b:1:a01:2:308:808:808", false, "10.1.2.3"},
		{"local-use NAT64 /64, private", "64:ff9b:1:0:a:0:100:0", false, "10.0.0.1"},
		{"local-use NAT64 /96, public where every layout is", "64:ff9b:1:808:8:808:808:808", true, ""},
		{"6to4, loopback", "2002:7f00:1::1", false, "127.0.0.1"},
		{"6to4, private", "2002:a00:1::", false, "10.0.0.1"},
		{"6to4, metadata", "2002:a9fe:a9fe::1", false, "169.254.169.254"},
		{"6to4, public", "2002:808:808::1", true, ""},
		{"Teredo, private client", "2001:0:808:808:0:0:f5ff:fffe", false, "10.0.0.1"},
		{"Teredo, loopback client", "2001:0:808:808::80ff:fffe", false, "127.0.0.1"},
		{"Teredo, private server", "2001:0:a00:1::f7f7:f7f7", false, "10.0.0.1"},
		{"Teredo, both public", "2001:0:808:808::f7f7:f7f7", true, ""},
		{"ISATAP, private", "2001:db8::5efe:10.0.0.1", false, "10.0.0.1"},
		{"ISATAP with the u bit, loopback", "2606:2800:21f:cb07:200:5efe:7f00:1", false, "127.0.0.1"},
		{"ISATAP, public", "2606:2800:21f:cb07:200:5efe:808:808", true, ""},
		{"ISATAP under a link-local prefix, public inside", "fe80::5efe:808:808", false, ""},
	} {
		t.Run(tc.form, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			if got := g.Allowed(a); got != tc.allowed {
				t.Fatalf("Allowed(%s) = %t, want %t", tc.addr, got, tc.allowed)
			}
			err := g.CheckURL(context.Background(), "http://["+tc.addr+"]:8080/h")
			if tc.allowed {
				if err != nil {
					t.Fatalf("CheckURL: %v", err)
				}
				return
			}
			var refused *webhook.RefusedError
			if !errors.As(err, &refused) || refused.Addr != a {
				t.Fatalf("CheckURL: %v", err)
			}
			if got := refused.Embedded; (tc.embedded == "" && got.IsValid()) || (tc.embedded != "" && got.String() != tc.embedded) {
				t.Errorf("refused for %v, want %q (%v)", got, tc.embedded, err)
			}
		})
	}
	// An allowed network lets the embedded forms of its addresses through too.
	internal := webhook.NewGuard([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	for _, addr := range []string{"10.0.0.1", "::ffff:10.0.0.1", "64:ff9b::10.0.0.1", "2002:a00:1::"} {
		if !internal.Allowed(netip.MustParseAddr(addr)) {
			t.Errorf("with 10.0.0.0/8 allowed, Allowed(%s) = false", addr)
		}
	}
	if internal.Allowed(netip.MustParseAddr("::127.0.0.1")) {
		t.Error("with 10.0.0.0/8 allowed, ::127.0.0.1 was allowed")
	}
}

func TestGuardNetworks(t *testing.T) {
	nets, err := webhook.ParseNetworks(" 127.0.0.0/8, 10.1.2.3 ,")
	if err != nil || len(nets) != 2 {
		t.Fatalf("ParseNetworks: %v %v", nets, err)
	}
	allow := webhook.NewGuard(nets)
	if !allow.Allowed(netip.MustParseAddr("127.0.0.1")) || !allow.Allowed(netip.MustParseAddr("10.1.2.3")) ||
		allow.Allowed(netip.MustParseAddr("10.1.2.4")) {
		t.Error("the allowed networks are not applied exactly")
	}
	if _, err := webhook.ParseNetworks("10.0.0.0/33"); err == nil {
		t.Error("a bad CIDR parsed")
	}
}

func TestCheckURL(t *testing.T) {
	g := webhook.NewGuard(nil)
	ctx := context.Background()
	for raw, ok := range map[string]bool{
		"https://93.184.215.14/hook": true, "https://hooks.example.invalid/x": true, // does not resolve: checked when dialed
		"http://127.0.0.1:8080/": false, "http://[::1]/": false, "http://localhost/": false, "http://a.localhost/": false,
		"https://u:p@93.184.215.14/": false, "ftp://93.184.215.14/": false, "/relative": false, "https://93.184.215.14/#f": false,
	} {
		if err := g.CheckURL(ctx, raw); (err == nil) != ok {
			t.Errorf("CheckURL(%s) = %v, want ok %t", raw, err, ok)
		}
	}
}

func TestDeliver(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	key, _ := webhook.ParseSecret(specSecret)
	msg := webhook.Message{ID: "evt_1", Body: []byte(`{"type":"x"}`)}
	ctx := context.Background()

	loop := netip.MustParsePrefix("127.0.0.0/8")
	res := webhook.Deliver(ctx, webhook.NewGuard([]netip.Prefix{loop}).Client(time.Second), srv.URL+"/ok", key, msg)
	if !res.Delivered || res.StatusCode != 204 || got.Get("webhook-id") != "evt_1" ||
		webhook.Verify(specSecret, got, msg.Body, time.Now(), time.Minute) != nil {
		t.Errorf("delivery %+v, headers %v", res, got)
	}
	res = webhook.Deliver(ctx, webhook.NewGuard([]netip.Prefix{loop}).Client(time.Second), srv.URL+"/redirect", key, msg)
	if res.Delivered || res.StatusCode != 302 || !strings.Contains(res.Error, "redirects are not followed") {
		t.Errorf("redirect: %+v", res)
	}
	got = nil
	res = webhook.Deliver(ctx, webhook.NewGuard(nil).Client(time.Second), srv.URL+"/ok", key, msg)
	if res.Delivered || got != nil || !strings.HasPrefix(res.Error, "refused destination: 127.0.0.1") {
		t.Errorf("loopback without permission: %+v", res)
	}
}
