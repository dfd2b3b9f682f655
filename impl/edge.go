package impl

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The checks at the edge (openapi.yaml, info.description, "Input"): whatever
// reaches validation and the handlers is text PostgreSQL can store. Every
// string of a request, a query parameter's name and value, the path and every
// member name and string value of a JSON body, must be valid UTF-8 without the
// character U+0000; a query string must parse as a whole. Failures are code
// "400" naming the parameter or field, never a dropped filter and never a 500
// from the database ("invalid byte sequence for encoding UTF8").

// textError is the rule every string of a request must follow.
const textError = "must be valid UTF-8 text without NUL (U+0000) characters"

// validText reports whether s is valid UTF-8 without NUL.
func validText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// checkPath refuses a path that is not valid text, or one that is not in its
// clean form (`//`, `/./`, `/../`), which Go's router would otherwise answer
// with a redirect: the path of an operation is written one way only.
func checkPath(r *http.Request) *Error {
	p := r.URL.Path
	if !validText(p) {
		return badRequest("path: %s", textError)
	}
	if p == "" || p[0] != '/' || strings.Contains(p, "//") || strings.Contains(p, "/./") ||
		strings.Contains(p, "/../") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
		return &Error{Code: CodeNotFound, HTTPStatus: http.StatusNotFound,
			Msg: "no such operation: the path is not in its clean form (no empty, . or .. segments)"}
	}
	return nil
}

// checkQuery refuses a query string that does not parse as a whole (Go's
// parser would drop the offending parameter: a filter vanishing widens a
// result) and any parameter name or value that is not valid text.
func checkQuery(raw string) *Error {
	if raw == "" {
		return nil
	}
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		if strings.IndexByte(part, ';') >= 0 {
			return badRequest("query string: a parameter contains \";\", which must be sent encoded as %%3B")
		}
		name, value, _ := strings.Cut(part, "=")
		key, err := url.QueryUnescape(name)
		if err != nil {
			return badRequest("query string: a parameter name has a malformed %%-escape")
		}
		if !validText(key) {
			return badRequest("query string: a parameter name %s", textError)
		}
		v, err := url.QueryUnescape(value)
		if err != nil {
			return badRequest("query parameter %q: malformed %%-escape", shortName(key))
		}
		if !validText(v) {
			return badRequest("query parameter %q: %s", shortName(key), textError)
		}
	}
	return nil
}

// maxBodyDepth is how deeply the arrays and objects of a JSON body may nest
// (openapi.yaml, info.description, "Input"). No operation's body needs more
// than a few levels; the bound keeps the scan below, the decoder and the
// error texts from costing memory in proportion to the nesting.
const maxBodyDepth = 64

// errBodyTooDeep is the reply to a body nested deeper than maxBodyDepth.
var errBodyTooDeep = badRequest("request body: arrays and objects nest deeper than %d levels", maxBodyDepth)

// errBodyTooMany is the reply to a body with more values than its operation's
// schema lets a body hold (operation.bodyValues).
func errBodyTooMany(max int) *Error {
	return badRequest("request body: more values than this operation takes (at most %d arrays, objects, strings, numbers and literals in all)", max)
}

// checkBodyText refuses a JSON body with a string (a member name or a value)
// that is not valid text: raw bytes that are not UTF-8, an escaped NUL
// (\u0000) or an unpaired surrogate (\udfff), which Go's JSON decoder would
// silently turn into U+FFFD; a body whose arrays and objects nest deeper than
// maxBodyDepth; and one with more than maxValues values (none when it is not
// positive), all before anything decodes it: decoding costs memory by the
// nesting and by the number of values, tens of times a body's size. Anything
// else that is wrong with the body is left to validation, which names it; so
// is a body that is not JSON at all. tooMany, when not nil, is the error of
// a body with too many values (operation.tooMany).
func checkBodyText(body []byte, maxValues int, tooMany *Error) *Error {
	switch where, problem := scanJSONBody(body, maxValues); problem {
	case jsonTooDeep:
		return errBodyTooDeep
	case jsonTooMany:
		if tooMany != nil {
			return tooMany
		}
		return errBodyTooMany(maxValues)
	case jsonBadText:
		if where == "" {
			return badRequest("request body: %s", textError)
		}
		return badRequest("request body: field %q: %s", where, textError)
	}
	return nil
}

// jsonFrame is one open object or array of the JSON being scanned.
type jsonFrame struct {
	object    bool
	expectKey bool
	key       string // the member being read, at most maxNameBytes of it
	index     int
}

// jsonProblem is what scanJSONBody found wrong with a body.
type jsonProblem int

const (
	jsonFine    jsonProblem = iota
	jsonBadText             // a string that is not valid text
	jsonTooDeep             // nested deeper than maxBodyDepth
	jsonTooMany             // more values than allowed
)

// scanJSONBody scans body as JSON and reports the first problem: a string
// that is not valid text (with its field path, members and indices joined by
// dots as validation names fields, shortened by fieldPath), nesting deeper
// than maxBodyDepth, or more than maxValues values when it is positive (each
// array, object, string, number and literal counts, wherever it nests; member
// names do not). It stops quietly at the first syntax error. It keeps at most
// maxBodyDepth frames and maxNameBytes of each member name, so that it costs
// the same small memory whatever the body holds.
func scanJSONBody(body []byte, maxValues int) (where string, problem jsonProblem) {
	var stack []jsonFrame
	// A value starts where one is due: at the start, after a member's ':', after
	// an array's '[' (unless ']' follows) and after its ','.
	values, due := 0, true
	value := func() bool {
		if !due {
			return true
		}
		due = false
		values++
		return maxValues <= 0 || values <= maxValues
	}
	path := func(member string, isKey bool) string {
		parts := make([]string, 0, len(stack)+1)
		for _, f := range stack {
			if f.object {
				if f.expectKey {
					continue // a member name being read: named below
				}
				parts = append(parts, f.key)
			} else {
				parts = append(parts, strconv.Itoa(f.index))
			}
		}
		if isKey {
			parts = append(parts, member)
		}
		return fieldPath(parts)
	}
	for i := 0; i < len(body); {
		switch c := body[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '{', '[':
			if !value() {
				return "", jsonTooMany
			}
			if len(stack) == maxBodyDepth {
				return "", jsonTooDeep
			}
			if stack == nil {
				stack = make([]jsonFrame, 0, 8)
			}
			stack = append(stack, jsonFrame{object: c == '{', expectKey: c == '{'})
			due = c == '['
			i++
		case '}', ']':
			due = false
			if len(stack) == 0 {
				return "", jsonFine
			}
			stack = stack[:len(stack)-1]
			i++
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].expectKey = true
				} else {
					stack[n-1].index++
					due = true
				}
			}
			i++
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
			due = true
			i++
		case '"':
			isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expectKey
			if !isKey && !value() {
				return "", jsonTooMany
			}
			keep := 0
			if isKey {
				keep = maxNameBytes + utf8.UTFMax // enough for fieldPath to see that a longer name is cut
			}
			s, end, ok := scanJSONString(body, i+1, keep)
			if !ok {
				if end < 0 {
					return "", jsonFine // unterminated: a syntax error for validation
				}
				if isKey {
					return path("(a member name)", true), jsonBadText
				}
				return path("", false), jsonBadText
			}
			if isKey {
				stack[len(stack)-1].key = s
			}
			i = end
		default:
			if !value() {
				return "", jsonTooMany
			}
			if c < utf8.RuneSelf {
				i++
				continue
			}
			// A byte beyond ASCII outside a string: not JSON, but it must
			// not pass as text either.
			if r, size := utf8.DecodeRune(body[i:]); r == utf8.RuneError && size <= 1 {
				return "", jsonBadText
			} else {
				i += size
			}
		}
	}
	return "", jsonFine
}

// scanJSONString reads the JSON string whose contents start at body[i] up to
// its closing quote. It returns the first keep bytes of the decoded text (or
// up to keep, whole characters only: member names need a prefix to name a
// field, values nothing), the index after the closing quote, and ok = false
// when the string holds something that is not valid text; end is -1 when the
// string never ends.
func scanJSONString(body []byte, i int, keep int) (s string, end int, ok bool) {
	var b []byte
	add := func(r rune) {
		if len(b)+utf8.RuneLen(r) <= keep {
			b = utf8.AppendRune(b, r)
		}
	}
	ok = true
	for i < len(body) {
		c := body[i]
		switch {
		case c == '"':
			return string(b), i + 1, ok
		case c == '\\':
			if i+1 >= len(body) {
				return "", -1, false
			}
			if body[i+1] != 'u' {
				add(rune(body[i+1]))
				i += 2
				continue
			}
			r, n := jsonEscape(body[i:])
			if n == 0 {
				return "", -1, false // a malformed escape: validation says so
			}
			if r < 0 {
				ok = false
			} else {
				add(r)
			}
			i += n
		case c == 0:
			ok = false
			i++
		case c < utf8.RuneSelf:
			add(rune(c))
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size <= 1 {
				ok = false
				i++
				continue
			}
			add(r)
			i += size
		}
	}
	return "", -1, false
}

// jsonEscape decodes the \uXXXX escape (with its low surrogate when it is a
// high one) at the start of p. It returns the rune and the bytes used; the
// rune is -1 for NUL or an unpaired surrogate, and n is 0 for a malformed escape.
func jsonEscape(p []byte) (r rune, n int) {
	hex := func(p []byte) (rune, bool) {
		if len(p) < 6 || p[0] != '\\' || p[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(p[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex(p)
	if !ok {
		return 0, 0
	}
	switch {
	case r == 0:
		return -1, 6
	case r >= 0xDC00 && r <= 0xDFFF:
		return -1, 6
	case r >= 0xD800 && r <= 0xDBFF:
		low, ok := hex(p[6:])
		if !ok || low < 0xDC00 || low > 0xDFFF {
			return -1, 6
		}
		return utf16.DecodeRune(r, low), 12
	}
	return r, 6
}
