package mailer_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	nethtml "golang.org/x/net/html"

	"github.com/crmservice/crm/impl/mailer"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/; go test runs them, and
// go test -fuzz=<FuzzName> ./impl/mailer/ looks for more.

// FuzzSanitize checks that the sanitiser's output of any input is safe to
// embed in a page and stable: no script element, no event handler attribute,
// no link that is not http, https or mailto, valid UTF-8, and sanitising it
// again changes nothing.
func FuzzSanitize(f *testing.F) {
	f.Fuzz(func(t *testing.T, src string) {
		out := mailer.Sanitize(src)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: not UTF-8", src, out)
		}
		if strings.Contains(strings.ToLower(out), "<script") {
			t.Fatalf("Sanitize(%q) = %q: a script element", src, out)
		}
		z := nethtml.NewTokenizer(strings.NewReader(out))
		for tt := z.Next(); tt != nethtml.ErrorToken; tt = z.Next() {
			if tt != nethtml.StartTagToken && tt != nethtml.SelfClosingTagToken {
				continue
			}
			for _, a := range z.Token().Attr {
				key, value := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(key, "on") {
					t.Fatalf("Sanitize(%q) = %q: the event handler %s", src, out, a.Key)
				}
				if (key == "href" || key == "src") && !strings.HasPrefix(value, "http://") && !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "mailto:") {
					t.Fatalf("Sanitize(%q) = %q: the link %s=%q", src, out, a.Key, a.Val)
				}
			}
		}
		if again := mailer.Sanitize(out); again != out {
			t.Fatalf("Sanitize is not stable:\n%q\n→ %q\n→ %q", src, out, again)
		}
	})
}

// FuzzParse checks that any bytes parse without a panic into fields that
// PostgreSQL stores as they are (UTF-8 without NUL) and a preview of at most
// PreviewLength characters.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, headerOnly bool) {
		m := mailer.Parse(raw, headerOnly)
		if n := utf8.RuneCountInString(m.Preview); n > mailer.PreviewLength {
			t.Fatalf("a preview of %d characters", n)
		}
		fields := map[string]string{"from name": m.From.Name, "from address": m.From.Address, "subject": m.Subject,
			"message id": m.MessageID, "html": m.HTML, "preview": m.Preview}
		for _, list := range [][]string{mailer.Addresses(m.To, m.Cc, m.Bcc), {mailer.DisplayNames(m.To)}, m.References} {
			for _, s := range list {
				fields["an address or reference"] = fields["an address or reference"] + s
			}
		}
		for name, s := range fields {
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("%s %q: not UTF-8 without NUL", name, s)
			}
		}
		if m.MessageID == "" || !strings.HasPrefix(m.MessageID, "<") || !strings.HasSuffix(m.MessageID, ">") {
			t.Fatalf("message id %q", m.MessageID)
		}
		if bytes.Contains(bytes.ToLower([]byte(m.HTML)), []byte("<script")) {
			t.Fatalf("html %q", m.HTML)
		}
	})
}
