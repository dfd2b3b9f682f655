package mailer

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"
)

// MaxRecipients caps the addresses of one message: to, cc and bcc together.
const MaxRecipients = 100

// Draft is a message to send as a client gives it: subject and HTML body as
// the Base64 of UTF-8 text, recipients as comma-separated lists of addresses.
// The errors of DecodeDraft name its fields subject, body, to_address, cc and
// bcc.
type Draft struct {
	Subject, Body string
	To, Cc, Bcc   string
}

// Outgoing is a Draft decoded and checked: each of its parts can go into a
// message as it is.
type Outgoing struct {
	Subject, HTML string
	To, Cc, Bcc   []*mail.Address
}

// DecodeDraft decodes subject and body and parses the addresses, refusing with
// an *InputError anything that could not go into a message header as it is
// (header injection): line breaks and other control characters, addresses
// other than ASCII local@domain.tld, more than MaxRecipients recipients.
func DecodeDraft(d Draft) (*Outgoing, error) {
	m := &Outgoing{}
	var err error
	if m.Subject, err = DecodeText("subject", d.Subject); err != nil {
		return nil, err
	}
	if strings.IndexFunc(m.Subject, unicode.IsControl) >= 0 {
		return nil, inputError("subject", "must not contain line breaks or other control characters")
	}
	if m.HTML, err = DecodeText("body", d.Body); err != nil {
		return nil, err
	}
	if m.To, err = ParseRecipients("to_address", d.To); err != nil {
		return nil, err
	}
	if len(m.To) == 0 {
		return nil, inputError("to_address", "at least one address is required")
	}
	if m.Cc, err = ParseRecipients("cc", d.Cc); err != nil {
		return nil, err
	}
	if m.Bcc, err = ParseRecipients("bcc", d.Bcc); err != nil {
		return nil, err
	}
	if n := len(m.To) + len(m.Cc) + len(m.Bcc); n > MaxRecipients {
		return nil, inputError("", "%d recipients, at most %d are allowed", n, MaxRecipients)
	}
	return m, nil
}

// DecodeText decodes the Base64 text of field: the standard or the URL-safe
// alphabet, with or without padding, line breaks ignored, into UTF-8 text
// without NUL characters.
func DecodeText(field, encoded string) (string, error) {
	raw, err := decodeBase64(strings.NewReplacer("\r", "", "\n", "").Replace(encoded))
	if err != nil {
		return "", inputError(field, "not valid Base64")
	}
	if !utf8.Valid(raw) {
		return "", inputError(field, "the decoded text is not UTF-8")
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return "", inputError(field, "the decoded text contains a NUL character")
	}
	return string(raw), nil
}

// decodeBase64 decodes the standard or the URL-safe alphabet, with or without
// padding.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.DecodeString(s)
}

// mailboxAddress is the form of an address this service sends to and from:
// ASCII, no white space, a dot in the domain (EmailAddress in the contract).
var mailboxAddress = regexp.MustCompile(`^[!#-'*+\-/-9=?A-Z^-~.]+@[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?\.[A-Za-z0-9\-]+$`)

// ValidAddress reports whether addr is an address this service sends to and
// from: ASCII local@domain.tld without white space, at most 254 characters.
func ValidAddress(addr string) bool {
	return len(addr) <= 254 && mailboxAddress.MatchString(addr)
}

// ParseRecipients parses the comma-separated addresses of field
// ("a@x.example", "Name <a@x.example>"); empty text is an empty list.
func ParseRecipients(field, list string) ([]*mail.Address, error) {
	if strings.ContainsAny(list, "\r\n") {
		return nil, inputError(field, "must not contain line breaks")
	}
	if strings.IndexFunc(list, unicode.IsControl) >= 0 {
		return nil, inputError(field, "must not contain control characters")
	}
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	addrs, err := mail.ParseAddressList(list)
	if err != nil {
		return nil, inputError(field, "not a valid address or comma-separated list of addresses")
	}
	for i, a := range addrs {
		if !ValidAddress(a.Address) {
			return nil, inputError(field, "address %d is not of the form local@domain.tld (ASCII, no spaces)", i+1)
		}
	}
	return addrs, nil
}

// Addresses lists the bare addresses of the lists, in order.
func Addresses(lists ...[]*mail.Address) []string {
	var out []string
	for _, l := range lists {
		for _, a := range l {
			out = append(out, a.Address)
		}
	}
	return out
}

// DisplayNames names the addresses of list as a reader sees them: the display
// name, or the address of one without a name, comma-separated; "" when no
// address of the list has a name.
func DisplayNames(list []*mail.Address) string {
	named := false
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = a.Address
		if name := strings.TrimSpace(a.Name); name != "" {
			parts[i], named = name, true
		}
	}
	if !named {
		return ""
	}
	return strings.Join(parts, ", ")
}

// EnvelopeRecipients are the RCPT TO addresses of a message whose to, cc and
// bcc are stored as comma-separated addresses: each address once, in order.
func EnvelopeRecipients(lists ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, a := range strings.Split(l, ",") {
			a = strings.TrimSpace(a)
			if a != "" && !seen[strings.ToLower(a)] {
				seen[strings.ToLower(a)] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// NewMessageID returns a new Message-ID, with angle brackets, in the domain of
// the sender's address from.
func NewMessageID(from string) string {
	var r [16]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
	domain := from[strings.LastIndexByte(from, '@')+1:]
	if domain == "" || domain == from {
		domain = "crm.invalid"
	}
	return "<crm." + hex.EncodeToString(r[:]) + "@" + domain + ">"
}

// Compose writes the MIME text of m from the sender from: multipart/alternative
// with the plain text derived from the HTML body (HTMLToText), then the HTML
// body, both UTF-8 and quoted-printable, under the given Date and Message-ID.
// Bcc recipients are not in the header. It also returns the plain text.
func (m *Outgoing) Compose(from *mail.Address, date time.Time, messageID string) (raw []byte, text string, err error) {
	var h gomail.Header
	h.SetDate(date)
	h.SetAddressList("From", []*gomail.Address{from})
	h.SetAddressList("To", m.To)
	h.SetAddressList("Cc", m.Cc)
	h.SetSubject(m.Subject)
	h.Set("Message-Id", messageID)
	text = HTMLToText(m.HTML)
	// Sized once: quoted-printable text is about as long as the text.
	var buf bytes.Buffer
	buf.Grow((len(text)+len(m.HTML))*11/10 + 4096)
	w, err := gomail.CreateInlineWriter(&buf, h)
	if err != nil {
		return nil, "", fmt.Errorf("compose mail: %w", err)
	}
	for _, part := range []struct{ contentType, body string }{{"text/plain", text}, {"text/html", m.HTML}} {
		var ph gomail.InlineHeader
		ph.SetContentType(part.contentType, map[string]string{"charset": "utf-8"})
		pw, err := w.CreatePart(ph)
		if err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
		if _, err := io.WriteString(pw, part.body); err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
		if err := pw.Close(); err != nil {
			return nil, "", fmt.Errorf("compose mail: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("compose mail: %w", err)
	}
	return buf.Bytes(), text, nil
}
