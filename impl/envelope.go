package impl

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/crmservice/crm/gen"
)

// Every reply of the server is an envelope (openapi.yaml, Envelope) built here
// and written by writeEnvelope; failures go through writeError (errors.go).

// envelope builds the reply envelope; every reply of the server goes through it.
func envelope(status gen.EnvelopeStatus, code *string, msg string, value string) gen.Envelope {
	return gen.Envelope{Status: status, Error: msg, Code: code, Value: value}
}

// success is the envelope of a successful single-record operation.
func success(value string) gen.Envelope {
	return envelope(gen.StatusSuccess, nil, "", value)
}

// successList is the envelope of a list: rows in total, the page served and its size.
func successList(value string, rows, page, perPage int) gen.Envelope {
	env := success(value)
	env.Rows, env.Page = rows, page
	if rows > 0 {
		env.Pages = (rows + perPage - 1) / perPage
	}
	return env
}

// quickListEnvelope is the envelope of a list without paging: every row on
// one page.
func quickListEnvelope(out listResult) gen.Envelope {
	return successList(out.Value, out.Rows, quickPage(out.Rows), out.Rows)
}

// writeEnvelope writes env as the whole reply with the given HTTP status.
func writeEnvelope(w http.ResponseWriter, httpStatus int, env gen.Envelope) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = writeEnvelopeBytes(w, httpStatus, env)
}

// writeEnvelopeBytes encodes env (appendEnvelope) into a buffer kept from
// earlier replies and writes it with the JSON content type.
func writeEnvelopeBytes(w http.ResponseWriter, httpStatus int, env gen.Envelope) error {
	bp := replyBuffers.Get().(*[]byte)
	b := appendEnvelope((*bp)[:0], env)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_, err := w.Write(b)
	if cap(b) <= 4<<20 { // a rare larger reply does not keep its memory for ever
		*bp = b
		replyBuffers.Put(bp)
	}
	return err
}

// envelopeReply is the success reply of the operations whose value can be
// large (the card, the contact list, the universal list). The generated
// response types encode through encoding/json into a fresh buffer that grows
// by doubling, which for a reply of 760 kB cost more than escaping it; this
// one escapes the value once into a buffer kept from earlier replies and
// writes the very bytes encoding/json would (TestAppendEnvelope).
type envelopeReply gen.Envelope

func (r envelopeReply) VisitCompanyGetResponse(w http.ResponseWriter) error { return r.write(w) }

func (r envelopeReply) VisitContactListResponse(w http.ResponseWriter) error { return r.write(w) }

func (r envelopeReply) VisitCommonListPagingResponse(w http.ResponseWriter) error {
	return r.write(w)
}

func (r envelopeReply) write(w http.ResponseWriter) error {
	return writeEnvelopeBytes(w, http.StatusOK, gen.Envelope(r))
}

var replyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// appendEnvelope appends env as encoding/json encodes it (json.Encoder: the
// members in the struct's order, HTML-safe escapes, a final newline); every
// reply written by writeEnvelope or envelopeReply is made by it.
func appendEnvelope(b []byte, env gen.Envelope) []byte {
	b = slices.Grow(b, len(env.Value)+len(env.Value)/4+128)
	b = append(b, `{"code":`...)
	b = appendNullableString(b, env.Code)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, env.Error)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(env.Page), 10)
	b = append(b, `,"pages":`...)
	b = strconv.AppendInt(b, int64(env.Pages), 10)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, int64(env.Rows), 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(env.Status))
	b = append(b, `,"value":`...)
	b = appendJSONString(b, env.Value)
	return append(b, "}\n"...)
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// jsonSafe marks the ASCII bytes encoding/json copies into a string as they
// are: not the quote, the backslash, control characters or <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: \" \\ \n \r \t \b \f, \u00XX for other control characters and for
// <, > and &, \u2028 and \u2029, and U+FFFD for bytes that are not UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
