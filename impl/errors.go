package impl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// Error codes of the envelope (openapi.yaml, info.description).
const (
	CodeBadRequest   = "400"
	CodeUnauthorized = "401"
	CodeForbidden    = "403"
	CodeNotFound     = "404"
	CodeNotAllowed   = "405"
	CodeConflict     = "409"
	CodeTooMany      = "429"
	CodeInternal     = "500"
	CodeNotReady     = "503"
	// CodeClientGone is not sent (nobody is there to read it): it names, in
	// the access log and the metrics, a request whose client closed its
	// connection before the reply, as nginx's 499 does.
	CodeClientGone = "499"
)

// Error is a failure the client is told about: its code and text go into the
// envelope. Any other error is internal and answered with code 500 and a fixed text.
type Error struct {
	Code   string
	Msg    string
	Status gen.EnvelopeStatus // empty means "error"
	Value  *string            // nil means the operation's default error value
	// RetryAfter is the Retry-After of a 429, in seconds (at least 1).
	RetryAfter int
	// HTTPStatus, when set, is the reply's HTTP status instead of the one the
	// code has (200 for most): 404 and 405 for requests outside the contract.
	HTTPStatus int
}

func (e *Error) Error() string { return e.Msg }

func badRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Msg: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Msg: fmt.Sprintf(format, args...)}
}

// writeError is the one writer of error replies. A *Error is told to the client;
// anything else is logged with the request and answered as an internal error.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		apiErr = unavailable(err)
	}
	if (apiErr == nil || apiErr == errDeadline || apiErr == errUnreachable) && clientGone(r) {
		// The operation failed because it was cancelled with its request: not
		// an internal error, and no reply reaches anyone. Logged once: by the
		// deadline's wrapper when it answered first, else by the operation.
		info := infoFrom(r.Context())
		if !lateWriter(w) && (info == nil || info.goneLogged == nil || !info.goneLogged.Swap(true)) {
			s.log.InfoContext(r.Context(), "client went away", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		setRequestCode(r.Context(), CodeClientGone)
		w.WriteHeader(statusClientGone)
		return
	}
	if apiErr == errDeadline || apiErr == errUnreachable {
		s.log.WarnContext(r.Context(), "unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if apiErr == nil {
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		apiErr = &Error{Code: CodeInternal, Msg: internalErrorText(r.Context())}
	}
	status := apiErr.Status
	if status == "" {
		status = gen.StatusError
	}
	value := ""
	if op := operationFrom(r.Context()); op != nil {
		value = op.errorValue
	}
	if apiErr.Value != nil {
		value = *apiErr.Value
	}
	httpStatus := http.StatusOK
	switch apiErr.Code {
	case CodeUnauthorized:
		httpStatus = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description=%q`, apiErr.Msg))
	case CodeTooMany:
		httpStatus = http.StatusTooManyRequests
		w.Header().Set("Retry-After", strconv.Itoa(max(1, apiErr.RetryAfter)))
	case CodeNotReady:
		httpStatus = http.StatusServiceUnavailable
		if apiErr.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(apiErr.RetryAfter))
		}
	}
	if apiErr.HTTPStatus != 0 {
		httpStatus = apiErr.HTTPStatus
	}
	code := apiErr.Code
	setRequestCode(r.Context(), code)
	writeEnvelope(w, httpStatus, envelope(status, &code, cutText(apiErr.Msg, maxErrorText), value))
}

// statusClientGone is the HTTP status the access log and the metrics give a
// request whose client went away (CodeClientGone); it is written to a
// connection that is closed already.
const statusClientGone = 499

// clientGone reports whether the client of r closed its connection before
// the reply: net/http then cancels the request's context (a deadline ends it
// with DeadlineExceeded instead).
func clientGone(r *http.Request) bool {
	return errors.Is(r.Context().Err(), context.Canceled)
}

// internalErrorText is the fixed text of an internal error, followed by the
// request's id so that a user can quote it and an operator find its log lines:
// "internal error (request id 4bf92f3577b34da6a3ce929d0e0e4736)".
func internalErrorText(ctx context.Context) string {
	if id := requestIDFrom(ctx); id != "" {
		return "internal error (request id " + id + ")"
	}
	return "internal error"
}

// describeValidation turns a kin-openapi validation error into one line that names
// the parameter or body field and the rule, and never echoes the value sent.
func describeValidation(err error) string {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return firstLine(err.Error())
	}
	where := "request"
	switch {
	case reqErr.Parameter != nil:
		where = fmt.Sprintf("%s parameter %q", reqErr.Parameter.In, shortName(reqErr.Parameter.Name))
	case reqErr.RequestBody != nil:
		where = "request body"
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(reqErr.Err, &schemaErr) {
		if path := schemaErr.JSONPointer(); len(path) > 0 {
			where += fmt.Sprintf(": field %q", fieldPath(path))
		}
		return where + ": " + schemaReason(schemaErr)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(reqErr.Err, &parseErr) {
		if reqErr.RequestBody != nil {
			reason := "not valid JSON"
			if parseErr.Cause != nil {
				reason += " (" + firstLine(parseErr.Cause.Error()) + ")"
			}
			return where + ": " + reason
		}
		return where + ": " + firstLine(parseErr.Reason)
	}
	reason := reqErr.Reason
	if reqErr.Err != nil {
		reason = reqErr.Err.Error()
	}
	return where + ": " + firstLine(reason)
}

// Error texts are bounded whatever the request holds: a field path names at
// most maxPathParts members or indices of at most maxNameBytes each, and the
// whole text is at most maxErrorText bytes (writeError cuts a longer one). No
// text repeats a value sent; names of fields and parameters are the only
// part of a request an error quotes.
const (
	maxNameBytes = 64
	maxPathParts = 8
	maxErrorText = 512
)

// shortName is a member or parameter name as an error quotes it: at most
// maxNameBytes, whole characters, with "…" where it was cut.
func shortName(name string) string {
	return cutText(name, maxNameBytes)
}

// cutText is s cut to at most n bytes of whole characters, with "…" appended
// where it was cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// fieldPath joins the members and indices of a field as validation names it
// ("Contacts.1.first_name"), each name shortened; a path of more than
// maxPathParts parts keeps its first and last ones around "…".
func fieldPath(parts []string) string {
	if len(parts) > maxPathParts {
		head, tail := parts[:maxPathParts/2], parts[len(parts)-maxPathParts/2:]
		parts = append(append(append([]string(nil), head...), "…"), tail...)
	}
	short := make([]string, len(parts))
	for i, p := range parts {
		short[i] = shortName(p)
	}
	return strings.Join(short, ".")
}

// shortReason is a reason of kin-openapi's validation with the one name it
// takes from the request, an unknown member's, shortened.
// schemaReason is why a value failed its schema: the schema's own
// x-invalid-text where it has one (openapi.yaml: what a date-time looks like
// instead of its regular expression), else kin-openapi's reason.
func schemaReason(e *openapi3.SchemaError) string {
	if e.Schema != nil {
		if text, ok := e.Schema.Extensions["x-invalid-text"].(string); ok && text != "" {
			return text
		}
	}
	return shortReason(e.Reason)
}

func shortReason(reason string) string {
	if quoted, ok := strings.CutPrefix(reason, "property "); ok {
		if quoted, ok = strings.CutSuffix(quoted, " is unsupported"); ok {
			if name, err := strconv.Unquote(quoted); err == nil {
				return fmt.Sprintf("property %q is unsupported", shortName(name))
			}
		}
	}
	return reason
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// constraintErrors names, for each foreign key and check of the schema that bad
// input can break, the field at fault and what is wrong with it.
var constraintErrors = map[string]string{
	"companies_type_fk":                "type_id: no such value in directory 9 (counterparty types)",
	"companies_status_fk":              "status_id: no such value in directory 10 (counterparty statuses)",
	"companies_category_fk":            "category_id: no such value in directory 29 (counterparty categories)",
	"companies_group_fk":               "group_id: no such value in directory 49 (counterparty groups)",
	"companies_agent_fk":               "agent_id: no such value in directory 48 (agents)",
	"companies_user_fk":                "user_id: no such user in the account",
	"contacts_status_fk":               "status_id: no such value in directory 43 (statuses of contact persons)",
	"contacts_company_fk":              "company_id: no such counterparty",
	"phones_contact_fk":                "contact_id: no such contact person of this counterparty",
	"emails_contact_fk":                "contact_id: no such contact person of this counterparty",
	"deals_type_fk":                    "type_id: no such value in directory 40 (deal types)",
	"deals_status_fk":                  "status_id: no such value in directory 41 (deal stages)",
	"deals_user_fk":                    "user_id: no such user in the account",
	"deals_contact_fk":                 "contact_id: no such contact person of this counterparty",
	"deals_dates":                      "date_finish: must not be before date_start",
	"deals_company_fk":                 "company_id: no such counterparty",
	"deal_goods_goods_fk":              "goods_id: no such goods in the catalogue",
	"tasks_company_fk":                 "company_id: no such counterparty",
	"tasks_type_fk":                    "type_id: no such value in directory 35 (kinds of tasks)",
	"tasks_user_fk":                    "user_id: no such user in the account",
	"tasks_deal_fk":                    "deal_id: no such deal of this counterparty",
	"tasks_contact_fk":                 "contact_id: no such contact person of this counterparty",
	"tasks_dates":                      "date_finish: must not be before date_start",
	"document_goods_goods_fk":          "goods_ids: no such goods in the catalogue",
	"documents_type_fk":                "type_id: no such value in directory 44 (document types)",
	"documents_status_fk":              "status_id: no such value in directory 45 (document statuses)",
	"documents_user_fk":                "user_id: no such user in the account",
	"documents_contact_fk":             "contact_id: no such contact person of this counterparty",
	"documents_deal_fk":                "deal_id: no such deal of this counterparty",
	"money_movements_type_fk":          "type_id: no such value in directory 46 (payment forms)",
	"money_movements_category_fk":      "category_id: no such value in directory 47 (income and expense items)",
	"money_movements_user_fk":          "user_id: no such user in the account",
	"money_movements_company_deal_fk":  "deal_id: no such deal of this counterparty",
	"contact_socials_contact_fk":       "contact_id: no such contact person",
	"mail_messages_company_fk":         "mail.company_id: no such counterparty",
	"mail_messages_contact_fk":         "mail.contact_id: no such contact person",
	"mail_messages_deal_fk":            "mail.deal_id: no such deal",
	"mail_messages_company_contact_fk": "mail.contact_id: the contact person belongs to another counterparty",
	"mail_messages_company_deal_fk":    "mail.deal_id: the deal belongs to another counterparty",
}

// dbError maps the SQLSTATEs that bad input can cause (foreign key and check
// violations of the constraints above) to a 400; everything else stays internal.
func dbError(err error) error {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return err
	}
	switch code, constraint := violation(err); code {
	case "23503", "23514": // foreign_key_violation, check_violation
		if msg, ok := constraintErrors[constraint]; ok {
			return badRequest("%s", msg)
		}
	case "22001": // string_data_right_truncation
		return badRequest("a text is longer than its limit")
	case "22003": // numeric_value_out_of_range: a decimal, or a position's sum, too large for its column
		return badRequest("a number is out of range: amounts and sums up to 9999999999999999.99, quantities up to 999999999999999.999")
	case "22008": // datetime_field_overflow: a date of the right form outside PostgreSQL's range, such as year 0
		return badRequest("a date is out of range")
	}
	return err
}

// violation returns the SQLSTATE of a PostgreSQL error and the name of the
// constraint it broke, as the schema names it. A Citus worker reports the
// constraint of a shard, with the shard's number appended
// ("companies_type_fk_102169"), and only in the message text.
func violation(err error) (code, constraint string) {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return "", ""
	}
	constraint = pqErr.Constraint
	if constraint == "" {
		if m := constraintInMessage.FindStringSubmatch(pqErr.Message); m != nil {
			constraint = m[1]
		}
	}
	// No constraint of the schema ends in digits, so digits at the end are a shard's.
	return string(pqErr.Code), shardSuffix.ReplaceAllString(constraint, "")
}

var (
	constraintInMessage = regexp.MustCompile(`constraint "([^"]+)"`)
	shardSuffix         = regexp.MustCompile(`_[0-9]+$`)
)
