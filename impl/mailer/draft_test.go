package mailer_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/crmservice/crm/impl/mailer"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestDecodeText(t *testing.T) {
	for _, in := range []string{"fn5+Pw==", "fn5+Pw", "fn5-Pw==", "fn5-Pw", "fn5+\nPw==", "fn5+Pw==\r\n"} {
		if got, err := mailer.DecodeText("f", in); err != nil || got != "~~~?" {
			t.Errorf("DecodeText(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"fn5+Pw=", "fn5+P", "fn5-Pw+=", "%%%%", "fn 5"} {
		if _, err := mailer.DecodeText("f", in); err == nil {
			t.Errorf("DecodeText(%q) accepted", in)
		}
	}
}

func TestDecodeDraft(t *testing.T) {
	valid := mailer.Draft{Subject: b64("Offer ✓"), Body: b64("<p>x</p>"), To: "Janis Ozols <janis@contoso.example>",
		Cc: "a@x.example, B <b@y.example>", Bcc: "hidden@acme.example"}

	t.Run("OK", func(t *testing.T) {
		m, err := mailer.DecodeDraft(valid)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "Offer ✓" || m.HTML != "<p>x</p>" ||
			!slices.Equal(mailer.Addresses(m.To, m.Cc, m.Bcc), []string{"janis@contoso.example", "a@x.example", "b@y.example", "hidden@acme.example"}) ||
			mailer.DisplayNames(m.To) != "Janis Ozols" || mailer.DisplayNames(m.Cc) != "a@x.example, B" || mailer.DisplayNames(m.Bcc) != "" {
			t.Errorf("decoded %+v", m)
		}
	})

	many := make([]string, 101)
	for i := range many {
		many[i] = "r" + strconv.Itoa(i) + "@x.example"
	}
	for _, tc := range []struct {
		name   string
		change func(d *mailer.Draft)
		field  string
		reason string
	}{
		{"subject not Base64", func(d *mailer.Draft) { d.Subject = "%%%" }, "subject", "not valid Base64"},
		{"body not Base64", func(d *mailer.Draft) { d.Body = "PHA+*" }, "body", "not valid Base64"},
		{"subject not UTF-8", func(d *mailer.Draft) { d.Subject = base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}) }, "subject", "the decoded text is not UTF-8"},
		{"body with NUL", func(d *mailer.Draft) { d.Body = b64("a\x00b") }, "body", "the decoded text contains a NUL character"},
		{"subject header injection CRLF", func(d *mailer.Draft) { d.Subject = b64("Hi\r\nBcc: victim@x.example") }, "subject", "must not contain line breaks or other control characters"},
		{"subject with a tab", func(d *mailer.Draft) { d.Subject = b64("a\tb") }, "subject", "must not contain line breaks or other control characters"},
		{"to header injection", func(d *mailer.Draft) { d.To = "a@x.example\r\nBcc: victim@x.example" }, "to_address", "must not contain line breaks"},
		{"cc header injection", func(d *mailer.Draft) { d.Cc = "a@x.example\nBcc: victim@x.example" }, "cc", "must not contain line breaks"},
		{"bcc header injection", func(d *mailer.Draft) { d.Bcc = "a@x.example\rX: y" }, "bcc", "must not contain line breaks"},
		{"to with a control character", func(d *mailer.Draft) { d.To = "a@x.example\x01" }, "to_address", "must not contain control characters"},
		{"malformed to", func(d *mailer.Draft) { d.To = "not an address" }, "to_address", "not a valid address or comma-separated list of addresses"},
		{"to without a dot in the domain", func(d *mailer.Draft) { d.To = "a@localhost" }, "to_address", "address 1 is not of the form local@domain.tld (ASCII, no spaces)"},
		{"non-ASCII to", func(d *mailer.Draft) { d.To = "jānis@x.example" }, "to_address", "address 1 is not of the form local@domain.tld (ASCII, no spaces)"},
		{"an address over 254 characters", func(d *mailer.Draft) { d.To = strings.Repeat("a", 250) + "@x.example" }, "to_address", "address 1 is not of the form local@domain.tld (ASCII, no spaces)"},
		{"second cc malformed", func(d *mailer.Draft) { d.Cc = "a@x.example, b@y" }, "cc", "address 2 is not of the form local@domain.tld (ASCII, no spaces)"},
		{"no recipient", func(d *mailer.Draft) { d.To = " " }, "to_address", "at least one address is required"},
		{"too many recipients", func(d *mailer.Draft) { d.Bcc = strings.Join(many, ",") }, "", "104 recipients, at most 100 are allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := valid
			tc.change(&d)
			m, err := mailer.DecodeDraft(d)
			var ie *mailer.InputError
			if !errors.As(err, &ie) || *ie != (mailer.InputError{Field: tc.field, Reason: tc.reason}) || m != nil {
				t.Errorf("DecodeDraft = %v, %#v; want the input error %s: %s", m, err, tc.field, tc.reason)
			}
		})
	}
}

func TestEnvelopeRecipients(t *testing.T) {
	got := mailer.EnvelopeRecipients("a@x.example, B@x.example", "", "b@x.example,c@x.example , a@X.example")
	if want := []string{"a@x.example", "B@x.example", "c@x.example"}; !slices.Equal(got, want) {
		t.Errorf("EnvelopeRecipients = %q, want %q", got, want)
	}
}

func TestNewMessageID(t *testing.T) {
	for from, domain := range map[string]string{"a@acme.example": "acme.example", "broken": "crm.invalid", "a@": "crm.invalid"} {
		id := mailer.NewMessageID(from)
		if !regexp.MustCompile(`^<crm\.[0-9a-f]{32}@` + regexp.QuoteMeta(domain) + `>$`).MatchString(id) {
			t.Errorf("NewMessageID(%q) = %q", from, id)
		}
	}
	if a, b := mailer.NewMessageID("a@b.example"), mailer.NewMessageID("a@b.example"); a == b {
		t.Errorf("two Message-IDs are equal: %s", a)
	}
}

func TestCompose(t *testing.T) {
	m, err := mailer.DecodeDraft(mailer.Draft{Subject: b64("Offer – №1 ✓"), Body: b64("<h1>Offer</h1><p>Hello,<br>100&nbsp;EUR</p><ul><li>one</li></ul>"),
		To: "Janis Ozols <janis@contoso.example>", Cc: "boss@contoso.example", Bcc: "audit@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 11, 2, 10, 15, 0, 0, time.UTC)
	raw, text, err := m.Compose(&mail.Address{Name: "Member M", Address: "member@acme.example"}, date, "<crm.1@acme.example>")
	if err != nil {
		t.Fatal(err)
	}
	if text != "Offer\n\nHello,\n100 EUR\n\n- one" {
		t.Errorf("text %q", text)
	}
	if bytes.Contains(raw, []byte("audit@acme.example")) {
		t.Error("the bcc address is in the message")
	}
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header
	subject, _ := h.Subject()
	id, _ := h.MessageID()
	gotDate, _ := h.Date()
	from, _ := h.AddressList("From")
	to, _ := h.AddressList("To")
	cc, _ := h.AddressList("Cc")
	ct, _, _ := h.ContentType()
	if subject != "Offer – №1 ✓" || id != "crm.1@acme.example" || !gotDate.Equal(date) || len(from) != 1 || from[0].String() != `"Member M" <member@acme.example>` ||
		len(to) != 1 || to[0].Name != "Janis Ozols" || len(cc) != 1 || h.Get("Bcc") != "" || ct != "multipart/alternative" || h.Get("Mime-Version") != "1.0" {
		t.Errorf("header: %q %q %v %v %v %v %q", subject, id, gotDate, from, to, cc, ct)
	}
	var parts []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pct, params, _ := p.Header.(*gomail.InlineHeader).ContentType()
		body, _ := io.ReadAll(p.Body)
		parts = append(parts, pct+";"+params["charset"]+"\n"+strings.ReplaceAll(string(body), "\r\n", "\n"))
	}
	want := []string{"text/plain;utf-8\n" + text, "text/html;utf-8\n" + m.HTML}
	if !slices.Equal(parts, want) {
		t.Errorf("parts\n%q\nwant\n%q", parts, want)
	}
}
