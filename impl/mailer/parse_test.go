package mailer_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/mailer/mailertest"
)

func parse(raw string) mailer.Received { return mailer.Parse([]byte(mailertest.CRLF(raw)), false) }

func TestParse(t *testing.T) {
	t.Run("OK: plain text", func(t *testing.T) {
		m := parse(`From: Janis Ozols <janis.info@contoso.example>
To: Box <member@acme.example>, Other <someone@acme.example>
Cc: boss@contoso.example
Subject: =?utf-8?q?Re:_Offer_=E2=9C=93?=
Date: Mon, 02 Nov 2026 10:15:00 +0200
Message-ID: <m1@contoso.example>
In-Reply-To: <a@acme.example>
References: <b@acme.example> <a@acme.example>
Content-Type: text/plain; charset=utf-8

Hello,
<script>alert(1)</script> & thanks.

Janis
`)
		if m.From.Name != "Janis Ozols" || m.From.Address != "janis.info@contoso.example" ||
			!slices.Equal(mailer.Addresses(m.To), []string{"member@acme.example", "someone@acme.example"}) || mailer.DisplayNames(m.To) != "Box, Other" ||
			!slices.Equal(mailer.Addresses(m.Cc), []string{"boss@contoso.example"}) || len(m.Bcc) != 0 ||
			m.Subject != "Re: Offer ✓" || !m.Date.Equal(time.Date(2026, 11, 2, 8, 15, 0, 0, time.UTC)) || m.MessageID != "<m1@contoso.example>" ||
			!slices.Equal(m.References, []string{"<a@acme.example>", "<b@acme.example>", "<a@acme.example>"}) || m.Attachment ||
			m.Preview != "Hello, <script>alert(1)</script> & thanks. Janis" ||
			m.HTML != "<p>Hello,<br>\n&lt;script&gt;alert(1)&lt;/script&gt; &amp; thanks.</p>\n<p>Janis</p>" {
			t.Errorf("parsed %+v", m)
		}
	})

	t.Run("OK: HTML sanitised, other charsets, attachments", func(t *testing.T) {
		m := parse(`From: Stranger <stranger@elsewhere.example>
Subject: About the deal
Message-ID: <m2@elsewhere.example>
Content-Type: multipart/mixed; boundary=outer

--outer
Content-Type: multipart/alternative; boundary=inner

--inner
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Caf=E9 menu attached.
--inner
Content-Type: text/html; charset=utf-8

<html><head><style>p{color:red}</style><script>steal()</script></head>
<body><p onclick="steal()" style="x">Caf&eacute; <b>menu</b> <a href="javascript:steal()">here</a> <a href="https://menu.example/">menu</a><img src="https://track.example/p.gif" alt="logo"></p><iframe src="https://x.example"></iframe></body></html>
--inner--
--outer
Content-Type: application/pdf; name=menu.pdf
Content-Disposition: attachment; filename=menu.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--outer--
`)
		want := "\n" + `<p>Café <b>menu</b> <a>here</a> <a href="https://menu.example/">menu</a>logo</p>`
		if m.HTML != want || m.Preview != "Café menu attached." || !m.Attachment || !m.Date.IsZero() {
			t.Errorf("parsed %q %q %t %v", m.HTML, m.Preview, m.Attachment, m.Date)
		}
	})

	t.Run("OK: the preview of an HTML-only message is its text", func(t *testing.T) {
		m := parse("Content-Type: text/html\n\n<p>" + strings.Repeat("ā", 300) + "</p>")
		if m.Preview != strings.Repeat("ā", 255) {
			t.Errorf("preview of %d characters", utf8.RuneCountInString(m.Preview))
		}
	})

	t.Run("without Message-ID: an id derived from the bytes", func(t *testing.T) {
		raw := "From: info@contoso.example\nSubject: no id\n\nno message id here\n"
		a, b, c := parse(raw), parse(raw), parse(raw+"x")
		if !strings.HasPrefix(a.MessageID, "<sha256.") || !strings.HasSuffix(a.MessageID, "@crm.invalid>") || a.MessageID != b.MessageID || a.MessageID == c.MessageID {
			t.Errorf("ids %q %q %q", a.MessageID, b.MessageID, c.MessageID)
		}
	})

	t.Run("a broken From keeps its text as the name", func(t *testing.T) {
		m := parse("From: <<<broken\nSubject: broken\n\nstill stored\n")
		if m.From.Address != "" || m.Subject != "broken" || m.Preview != "still stored" {
			t.Errorf("parsed %+v", m)
		}
	})

	t.Run("control characters, NUL and bytes that are not UTF-8 never reach a field", func(t *testing.T) {
		m := parse("From: =?utf-8?b?QQBC?= <a@x.example>\nTo: =?utf-8?q?T=0Ao?= <t@x.example>\nSubject: =?utf-8?b?U3ViAGplY3QKeA==?=\n" +
			"Message-ID: <id\x01@x.example>\nContent-Type: text/plain; charset=utf-8\n\nbody \x00 with \xff bytes\n")
		if m.From.Name != "A B" || m.To[0].Name != "T o" || m.Subject != "Sub ject x" || m.Preview != "body with \uFFFD bytes" ||
			m.HTML != "<p>body  with \uFFFD bytes</p>" || strings.ContainsAny(m.MessageID, "\x00\x01") {
			t.Errorf("parsed %q %q %q %q %q %q", m.From.Name, m.To[0].Name, m.Subject, m.Preview, m.HTML, m.MessageID)
		}
	})

	t.Run("nothing readable: kept with its id only", func(t *testing.T) {
		m := mailer.Parse([]byte("\x00\x01 not a message"), false)
		if !strings.HasPrefix(m.MessageID, "<sha256.") || m.Subject != "" || m.HTML != "" {
			t.Errorf("parsed %+v", m)
		}
	})

	t.Run("a fetched message without Date takes its arrival time", func(t *testing.T) {
		arrived := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
		f := mailer.Fetched{Raw: []byte(mailertest.CRLF("Subject: x\n\nbody\n")), Arrived: arrived}
		if m := f.Message(); !m.Date.Equal(arrived) {
			t.Errorf("date %v", m.Date)
		}
	})
}
