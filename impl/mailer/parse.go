package mailer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decodes the charsets of received mail, not only UTF-8
	gomail "github.com/emersion/go-message/mail"
)

// Received is what is kept of a received message. Every text in it is UTF-8
// without NUL characters, so that PostgreSQL stores it as it is.
type Received struct {
	From        mail.Address
	To, Cc, Bcc []*mail.Address
	Subject     string    // control characters made spaces
	Date        time.Time // the Date header; zero when it has none or an unreadable one
	MessageID   string    // with angle brackets; derived from the bytes when the header has none
	References  []string  // In-Reply-To and References, with angle brackets
	Attachment  bool      // a part marked attachment, or any part neither text nor marked inline
	HTML        string    // the HTML body sanitised, or the plain text body as HTML
	Preview     string    // the first PreviewLength characters of the text
}

// maxPartSize caps the text read from one part of a received message.
const maxPartSize = 4 << 20

// Message is f as Parse reads it, its date the arrival time (else now) when
// the header has none, and its attachment flag taken from the body structure
// when only the header was fetched.
func (f *Fetched) Message() Received {
	in := Parse(f.Raw, f.HeaderOnly)
	if in.Date.IsZero() {
		in.Date = f.Arrived
	}
	if in.Date.IsZero() {
		in.Date = time.Now()
	}
	in.Attachment = in.Attachment || f.Attachment
	return in
}

// Parse reads a received message leniently: a header it cannot parse leaves
// its field empty, a body it cannot read leaves the body empty, and the
// message is kept all the same. With headerOnly, raw is the header alone.
func Parse(raw []byte, headerOnly bool) Received {
	var in Received
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil && r == nil { // nothing of it is readable: it is kept with its id only
		in.MessageID = syntheticMessageID(raw)
		return in
	}
	defer r.Close()
	h := r.Header
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		in.From = *from[0]
	} else {
		in.From.Name, _ = h.Text("From")
	}
	in.From.Name, in.From.Address = headerText(in.From.Name), headerText(in.From.Address)
	in.To = lenientAddressList(h, "To")
	in.Cc = lenientAddressList(h, "Cc")
	in.Bcc = lenientAddressList(h, "Bcc")
	in.Subject, _ = h.Subject()
	in.Subject = headerText(in.Subject)
	if d, err := h.Date(); err == nil {
		in.Date = d
	}
	if id, err := h.MessageID(); err == nil && id != "" {
		in.MessageID = "<" + headerText(id) + ">"
	} else {
		in.MessageID = syntheticMessageID(raw)
	}
	for _, key := range []string{"In-Reply-To", "References"} {
		ids, _ := h.MsgIDList(key)
		for _, id := range ids {
			in.References = append(in.References, "<"+headerText(id)+">")
		}
	}
	if headerOnly {
		return in
	}
	var text, htmlBody string
	for {
		p, err := r.NextPart()
		if err != nil && (p == nil || !message.IsUnknownCharset(err)) {
			break // io.EOF, or a part that cannot be read: keep what was read
		}
		switch ph := p.Header.(type) {
		case *gomail.AttachmentHeader:
			in.Attachment = true
		case *gomail.InlineHeader:
			ct, _, _ := ph.ContentType()
			body, _ := io.ReadAll(io.LimitReader(p.Body, maxPartSize))
			switch {
			case ct == "text/plain" && text == "":
				text = bodyText(body)
			case ct == "text/html" && htmlBody == "":
				htmlBody = bodyText(body)
			case !strings.HasPrefix(ct, "text/"):
				in.Attachment = true
			}
		}
	}
	switch {
	case htmlBody != "":
		in.HTML = Sanitize(htmlBody)
	default:
		in.HTML = TextToHTML(text)
	}
	if strings.TrimSpace(text) != "" {
		in.Preview = Preview(text)
	} else {
		in.Preview = Preview(HTMLToText(htmlBody))
	}
	return in
}

// bodyText is a body part as text: UTF-8, without NUL characters.
func bodyText(b []byte) string {
	return strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "")
}

// headerText is a decoded header value as one line of UTF-8: control
// characters (line breaks and NUL included) become spaces.
func headerText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// lenientAddressList parses an address header, keeping the addresses before
// the first one it cannot parse, each as one line of UTF-8.
func lenientAddressList(h gomail.Header, key string) []*mail.Address {
	list, err := h.AddressList(key)
	if err != nil {
		list = nil
		for _, part := range strings.Split(h.Get(key), ",") {
			if a, err := gomail.ParseAddress(part); err == nil {
				list = append(list, a)
			}
		}
	}
	for _, a := range list {
		a.Name, a.Address = headerText(a.Name), headerText(a.Address)
	}
	return list
}

// syntheticMessageID stands in for a missing Message-ID: derived from the
// message's bytes, so the same message fetched twice is still stored once.
func syntheticMessageID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "<sha256." + hex.EncodeToString(sum[:16]) + "@crm.invalid>"
}
