package crm

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crmservice/crm/sdk/go/crm/api"
)

// Error is every failure the API reports: an envelope whose status is "error"
// (or "Error", as the counterparty's card has it), and the HTTP 401, 429 and 503
// replies. Read it with errors.As:
//
//	var e *crm.Error
//	if errors.As(err, &e) && e.Code == "409" {
//		existing := e.ExistingID
//	}
type Error struct {
	// Code is the envelope's code: "400", "401", "403", "404", "409", "429",
	// "500", "503", …; for a reply that is no envelope, the HTTP status.
	Code string
	// Message is the envelope's error text.
	Message string
	// HTTPStatus is the reply's HTTP status (200 for most failures).
	HTTPStatus int
	// Status is the envelope's status as sent: "error" or "Error".
	Status string
	// RetryAfter is the reply's Retry-After (429, 503), or 0.
	RetryAfter time.Duration
	// ExistingID is the id of the counterparty that already has the e-mail,
	// for the duplicate (code "409") of CompanyInsert; 0 otherwise.
	ExistingID int64
	// Value is the envelope's value as sent.
	Value string
	// RequestID is the reply's X-Request-Id, for the operator's logs.
	RequestID string
}

// Error returns the code and the message.
func (e *Error) Error() string {
	if e.Code == "" {
		return "crm: " + e.Message
	}
	return "crm: " + e.Code + ": " + e.Message
}

func envelopeError(resp *http.Response, env *api.Envelope) *Error {
	e := &Error{HTTPStatus: resp.StatusCode, Status: string(env.Status), Value: env.Value, RequestID: resp.Header.Get("X-Request-Id")}
	if env.Code != nil {
		e.Code = *env.Code
	}
	if e.Code == "" {
		e.Code = strconv.Itoa(resp.StatusCode)
	}
	e.Message = env.Error
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	if e.Code == "409" {
		if id, err := strconv.ParseInt(env.Value, 10, 64); err == nil && id > 0 {
			e.ExistingID = id
		}
	}
	return e
}

// unexpected is the Error of a reply that is not an envelope (a proxy's page,
// 304 Not Modified after If-None-Match).
func unexpected(resp *http.Response, body []byte) *Error {
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf("HTTP %d without an envelope", resp.StatusCode)
	if text != "" {
		msg += ": " + text
	}
	return &Error{HTTPStatus: resp.StatusCode, Code: strconv.Itoa(resp.StatusCode), Message: msg, RequestID: resp.Header.Get("X-Request-Id")}
}
