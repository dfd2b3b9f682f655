package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// envelopeReply is a decoded reply envelope; pointers tell null from absent values.
type envelopeReply struct {
	Status *string `json:"status"`
	Error  *string `json:"error"`
	Code   *string `json:"code"`
	Rows   *int64  `json:"rows"`
	Pages  *int64  `json:"pages"`
	Page   *int64  `json:"page"`
	Value  *string `json:"value"`
}

// errorCodes are the codes info.description lists for failures.
var errorCodes = []string{"400", "401", "403", "404", "405", "409", "429", "500", "503"}

// CheckConventions validates what the conventions of info.description state
// about every reply but the schemas cannot express: error and code of a
// success, the error codes and their HTTP statuses and headers (404 and 405
// only for requests outside the contract, which never answer 200), the capital
// `Error`, the fixed text of code 500, and the value of a failure (x-error-value,
// or the existing id of a duplicate). It also holds for replies that no operation
// describes (an unknown path or method).
func (c *Contract) CheckConventions(method, target string, status int, header http.Header, body []byte) error {
	var env envelopeReply
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("the reply is not an envelope: %w", err)
	}
	if env.Status == nil || env.Value == nil {
		return errors.New("the reply is not an envelope: status or value is missing or null")
	}
	op, path := c.operation(method, target)
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	code := "null"
	if env.Code != nil {
		code = strconv.Quote(*env.Code)
	}

	if *env.Status == StatusSuccess {
		if env.Error == nil || *env.Error != "" {
			bad(`a success has error "", not %s`, quoteOrNull(env.Error))
		}
		mail := method == http.MethodPost && path == "/mail/send"
		switch {
		case env.Code == nil:
		case mail && *env.Code == "0":
		case mail:
			bad(`a success of POST /mail/send has code "0", not %s`, code)
		default:
			bad("a success has code null, not %s", code)
		}
	} else {
		if env.Error == nil || *env.Error == "" {
			bad("a failure has an error text, not %s", quoteOrNull(env.Error))
		}
		switch {
		case env.Code == nil:
			bad("a failure has a code, not null")
		case !slices.Contains(errorCodes, *env.Code):
			bad("code %s is not one of the documented codes %s", code, strings.Join(errorCodes, ", "))
		}
		if *env.Status == StatusErrorUpper && (method != http.MethodGet || path != "/company/get" || code != `"404"`) {
			bad(`status "Error" is only for a missing counterparty of GET /company/get (code "404")`)
		}
		if want := "internal error (request id " + header.Get("X-Request-Id") + ")"; code == `"500"` && env.Error != nil && *env.Error != want {
			bad(`code "500" has the error text %q (with the reply's X-Request-Id), not %q`, want, *env.Error)
		}
		if code == `"503"` && (op == nil || op.Responses.Status(http.StatusServiceUnavailable) == nil) {
			bad(`code "503" is only for the operations that document an HTTP 503 (GET /readyz; the webhook operations that need CRM_SECRET_KEY)`)
		}
		want := ""
		if op != nil {
			if v, ok := op.Extensions["x-error-value"].(string); ok {
				want = v
			}
		}
		if code == `"409"` {
			if id, err := strconv.ParseInt(*env.Value, 10, 64); err != nil || id < 1 {
				bad("a duplicate (code \"409\") has the existing record's id as value, not %q", *env.Value)
			}
		} else if *env.Value != want {
			bad("a failure of this operation has value %q, not %q", want, *env.Value)
		}
	}

	pairs := []struct {
		http int
		code string
	}{{http.StatusUnauthorized, "401"}, {http.StatusTooManyRequests, "429"}, {http.StatusServiceUnavailable, "503"}}
	for _, p := range pairs {
		if (status == p.http) != (code == strconv.Quote(p.code)) {
			bad("HTTP %d goes with code %q and only with it; got HTTP %d and code %s", p.http, p.code, status, code)
		}
	}
	// Outside the contract: HTTP 404 for a path, 405 with Allow for a method;
	// an operation's own "404" stays HTTP 200, and no operation answers "405".
	switch {
	case status == http.StatusNotFound && (op != nil || code != `"404"`):
		bad(`HTTP 404 is only for a path outside the contract, with code "404"; got code %s from %s`, code, operationName(op, method, path))
	case status == http.StatusMethodNotAllowed && (op != nil || code != `"405"` || header.Get("Allow") == ""):
		bad(`HTTP 405 is only for a method its path does not have, with code "405" and the header Allow; got code %s, Allow %q`, code, header.Get("Allow"))
	case op == nil && code == `"404"` && status != http.StatusNotFound:
		bad(`a path outside the contract answers HTTP 404, not %d`, status)
	case code == `"405"` && status != http.StatusMethodNotAllowed:
		bad(`code "405" goes with HTTP 405, not %d`, status)
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer") {
		bad("HTTP 401 has the header WWW-Authenticate: Bearer…, not %q", header.Get("WWW-Authenticate"))
	}
	if status == http.StatusTooManyRequests {
		if n, err := strconv.Atoi(header.Get("Retry-After")); err != nil || n < 1 {
			bad("HTTP 429 has the header Retry-After in whole seconds, not %q", header.Get("Retry-After"))
		}
	}
	if err := checkRequestID(header); err != nil {
		bad("%v", err)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// checkRequestID checks that a reply carries its request's id.
func checkRequestID(header http.Header) error {
	if id := header.Get("X-Request-Id"); id == "" || len(id) > 128 {
		return fmt.Errorf("every reply carries X-Request-Id (1 to 128 characters), not %q", id)
	}
	return nil
}

// CheckEnvelope validates a body against the Envelope schema alone: all that
// can be checked of a reply no operation describes.
func (c *Contract) CheckEnvelope(body []byte) error {
	ref := c.Doc.Components.Schemas["Envelope"]
	if ref == nil || ref.Value == nil {
		return errors.New("the contract has no Envelope schema")
	}
	v, err := DecodeValue(string(body))
	if err != nil {
		return fmt.Errorf("the reply: %w", err)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("the reply does not match Envelope: %w", err)
	}
	return nil
}

// operation finds the operation of the contract that a request goes to and its
// path template; nil and "" when there is none.
func (c *Contract) operation(method, target string) (*openapi3.Operation, string) {
	route, _, err := c.router.FindRoute(httptest.NewRequest(method, target, nil))
	if err != nil {
		return nil, ""
	}
	return route.Operation, route.Path
}

func quoteOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// operationName names op for a message: "GET /path", or "no operation".
func operationName(op *openapi3.Operation, method, path string) string {
	if op == nil {
		return "no operation"
	}
	return method + " " + path
}
