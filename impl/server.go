// Package impl is the hand-written server of the Customer Relationship Service: it
// implements the strict server interface generated from openapi.yaml over
// PostgreSQL, and wires authentication, rate limits and request validation in
// front of it.
package impl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/gen"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/webhook"
)

// Config holds what the server needs from its environment.
type Config struct {
	DB  *sqlx.DB
	Log *slog.Logger
	// RateLimit is the number of requests per second a token may make on average,
	// with bursts of RateBurst; 0 switches the limit off.
	RateLimit float64
	RateBurst int
	// AuthFailureLimit is the number of failed authentications per minute a
	// client address may make on average, with bursts of AuthFailureBurst; past
	// it the server answers 429 instead of 401. 0 switches the limit off.
	AuthFailureLimit float64
	AuthFailureBurst int
	// TrustedProxies are the reverse proxies (ParseTrustedProxies) from whose
	// connections the client address is taken from X-Forwarded-For; from any
	// other connection it is the connection's own address.
	TrustedProxies []netip.Prefix
	// Redis, when set (OpenRedis), keeps the counters of both limits for every
	// process of a deployment; nil keeps them in the process. Keys begin with
	// RedisPrefix ("crm:" when empty).
	Redis       *redis.Client
	RedisPrefix string
	// BodyLimit caps request bodies (1 MiB when 0); MailBodyLimit those of
	// POST /mail/send (10 MiB when 0).
	BodyLimit     int64
	MailBodyLimit int64
	// GenericDB, when set, is a pool of the same database whose sessions give
	// prepared statements generic plans (db.OpenGeneric). PostgreSQL otherwise
	// keeps planning each execution of the hot statements whose plans do not
	// depend on their values (the token lookup, the card, an unfiltered list
	// page): it prices their generic plan for an average account and prefers
	// planning anew, which costs as much as running them. Nil: DB.
	GenericDB *sqlx.DB
	// FastPath, when set, chooses whether the universal list and the contact
	// list run as statements that each read one table (the list's sent one by
	// one, impl/list_fast.go; the contact list's in the function
	// crm_contact_list of db/functions), or as single
	// statements that join their tables; nil chooses the functions where the
	// citus extension is installed. Citus keeps the plan only of a statement
	// of one table, and plans every join again at each execution; on plain
	// PostgreSQL a join is planned once and is the cheaper of the two
	// (docs/decisions.md, "The list and the contact list on Citus").
	FastPath *bool
	// Router, when set (db.NewRouter), sends the statements of each request to
	// the Citus node that holds the caller's account, with DB and GenericDB
	// the coordinator's; nil: everything to DB and GenericDB.
	Router *db.Router
	// Secrets encrypts and decrypts the secrets of webhook subscriptions
	// (CRM_SECRET_KEY); nil refuses the webhook operations that need one
	// (HTTP 503, code "503").
	Secrets *mailer.SecretBox
	// WebhookAllowedNetworks are webhook destinations allowed besides public
	// addresses (WEBHOOK_ALLOWED_NETWORKS); WebhookTimeout bounds a test
	// delivery (10 s when 0).
	WebhookAllowedNetworks []netip.Prefix
	WebhookTimeout         time.Duration
	// ListScanOnce is how many matches a filtered list reads in one pass, taking
	// its total and page from them (10,000 when 0); with more matches it counts
	// them and reads the page through the sort order's index instead.
	ListScanOnce int
	// TokenCacheTTL is how long a verified token is trusted without looking it
	// up again (tokencache.go): 1 s when 0, at most 1 s, negative: every
	// request looks its token up. Revocation, expiry and a user's deactivation
	// take effect within this time in every process.
	TokenCacheTTL time.Duration
	// MaxInFlight is how many operations the process serves at once; the
	// rest wait in the order they came, each for at most its deadline, then
	// get the 503 envelope with Retry-After (inflight.go). The probes
	// (/healthz, /readyz), /metrics and /docs never wait. 0: no bound
	// (MAX_IN_FLIGHT).
	MaxInFlight int
	// LargeRequests is how many requests with a body over 1 MiB the process
	// handles at once; past it such a request is answered 429 with Retry-After
	// (LARGE_REQUESTS; 0: 4, negative: no bound).
	LargeRequests int
	// Deadlines are the time limits of the operations by class (zero ones:
	// DefaultDeadlines); past one the client gets the 503 envelope.
	Deadlines Deadlines

	// Metrics, when set (NewMetrics), counts the requests, the limits and the
	// database pools; ServeMetrics also serves them at GET /metrics of this
	// handler (else the operator serves Metrics.Handler on a port of its own).
	Metrics      *Metrics
	ServeMetrics bool
	// TracerProvider, when set, makes every request a server span that
	// continues the W3C trace context it carries (traceparent); nil traces
	// nothing and costs nothing. The database pools trace their statements
	// when opened with db.WithTracerProvider.
	TracerProvider trace.TracerProvider
	// CORSOrigins are the origins browsers may call the API from
	// (ParseCORSOrigins); none when empty.
	CORSOrigins []string
	// Fault, for the tests of crashes only, names a point where the process
	// exits on purpose (CRM_FAULT): IdempotencyFault. Empty: none.
	Fault string
}

// Server implements gen.StrictServerInterface over PostgreSQL.
type Server struct {
	nodes  nodes // the pools of the database's nodes (route.go)
	log    *slog.Logger
	limits *limits

	scanOnce int
	fastPath bool // Config.FastPath
	// The calls of db/functions go bare to a Citus coordinator, which
	// delegates them (s.call): on Citus without a Router.
	delegateCalls  bool
	deadlines      Deadlines
	webhookTimeout time.Duration
	large          *largeRequests // nil: no bound
	inFlight       *inFlight      // nil: no bound

	fault  string      // Config.Fault
	tokens *tokenCache // tokens verified within the last second; nil: none

	secrets    *mailer.SecretBox // nil: no CRM_SECRET_KEY
	hookGuard  *webhook.Guard
	hookClient *http.Client

	observing // request ids, metrics, traces (observe.go)
}

var _ gen.StrictServerInterface = (*Server)(nil)

// NewHandler returns the HTTP handler of the whole API: every operation of
// openapi.yaml behind authentication, rate limiting and request validation.
func NewHandler(cfg Config) (http.Handler, error) {
	if cfg.DB == nil {
		return nil, errors.New("impl: Config.DB is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.MailBodyLimit <= 0 {
		cfg.MailBodyLimit = 10 << 20
	}
	if cfg.ListScanOnce <= 0 {
		cfg.ListScanOnce = 10_000
	}
	if cfg.TokenCacheTTL == 0 {
		cfg.TokenCacheTTL = maxTokenCacheTTL
	}
	cfg.Log = withRequestIDs(cfg.Log)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	citus, err := db.IsCitus(ctx, cfg.DB)
	cancel()
	if err != nil {
		return nil, err
	}
	fastPath := citus
	if cfg.FastPath != nil {
		fastPath = *cfg.FastPath
	}
	s := &Server{log: cfg.Log, limits: newLimits(cfg), tokens: newTokenCache(cfg.TokenCacheTTL),
		nodes:    nodes{router: cfg.Router, home: newDBNode(cfg.DB, cfg.GenericDB), byAddr: map[string]*dbNode{}},
		scanOnce: cfg.ListScanOnce, fastPath: fastPath, secrets: cfg.Secrets, fault: cfg.Fault,
		delegateCalls: citus && cfg.Router == nil}
	if cfg.WebhookTimeout <= 0 {
		cfg.WebhookTimeout = 10 * time.Second
	}
	s.deadlines, s.webhookTimeout = cfg.Deadlines.withDefaults(), cfg.WebhookTimeout
	if cfg.LargeRequests == 0 {
		cfg.LargeRequests = 4
	}
	s.large = newLargeRequests(cfg.LargeRequests, cfg.Metrics)
	s.inFlight = newInFlight(cfg.MaxInFlight)
	s.hookGuard = webhook.NewGuard(cfg.WebhookAllowedNetworks)
	s.hookClient = s.hookGuard.Client(cfg.WebhookTimeout)

	doc, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load the embedded openapi document: %w", err)
	}
	s.observing = newObserving(cfg, doc)
	vm, err := newValidatingMux(s, doc, cfg)
	if err != nil {
		return nil, err
	}
	strict := gen.NewStrictHandlerWithOptions(s, nil, gen.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			s.writeError(w, r, badRequest("request body: %s", describeDecodeError(err)))
		},
		ResponseErrorHandlerFunc: s.writeError,
	})
	h := gen.HandlerWithOptions(strict, gen.StdHTTPServerOptions{
		BaseRouter: vm,
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			s.writeError(w, r, badRequest("%s", firstLine(err.Error())))
		},
	})
	return s.httpLayers(cfg, s.recoverAndLog(h))
}

// requestInfo is what the middleware learns about a request, kept in its context
// so that the error writer and the access log can use it.
type requestInfo struct {
	op        *operation
	principal *Principal
	code      string
	id        string // X-Request-Id (observe.go)
	route     string // the metrics' name of a reply that is not an operation's
	// secretReply: the reply holds a secret, which an idempotent replay
	// stores sealed (markSecretReply).
	secretReply bool
	// goneLogged: "client went away" is logged (writeError), once per request
	// though the operation and the deadline's wrapper may both get there; a
	// pointer, so that the copies of the deadline's wrapper share it.
	goneLogged *atomic.Bool
}

type ctxKey int

const infoKey ctxKey = iota

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey).(*requestInfo)
	return info
}

func operationFrom(ctx context.Context) *operation {
	if info := infoFrom(ctx); info != nil {
		return info.op
	}
	return nil
}

func setRequestCode(ctx context.Context, code string) {
	if info := infoFrom(ctx); info != nil {
		info.code = code
	}
}

// statusWriter remembers the HTTP status written, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recoverAndLog turns a panic into the internal-error envelope (the stack goes to
// the log) and writes one access-log line per request.
func (s *Server) recoverAndLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := infoFrom(r.Context()) // made by observe
		if info == nil {
			info = &requestInfo{goneLogged: new(atomic.Bool)}
			r = r.WithContext(context.WithValue(r.Context(), infoKey, info))
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.writeError(sw, r, errors.New("panic"))
				}
			}
			attrs := []any{"method", r.Method, "path", r.URL.Path, "status", sw.status,
				"ms", float64(time.Since(start).Microseconds()) / 1000}
			if info.code != "" {
				attrs = append(attrs, "code", info.code)
			}
			if p := info.principal; p != nil {
				attrs = append(attrs, "account", p.AccountID, "user", p.UserID)
			}
			s.log.InfoContext(r.Context(), "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// operation is one operation of the document, resolved once at start-up.
type operation struct {
	id         string
	route      *routers.Route
	pathParams []string
	secured    bool
	bodyLimit  int64
	bodyValues int    // the most values a valid body holds (bodyValues); 0: no bound
	tooMany    *Error // the error of a body with more values: its schema's x-invalid-text; nil: errBodyTooMany
	errorValue string // the envelope's value on failure (x-error-value)
	idempotent bool   // takes an Idempotency-Key (idempotency.go)
	deadline   time.Duration
	probe      bool // /healthz or /readyz: never waits for a slot (inflight.go)
}

// validatingMux is the gen.ServeMux the generated code registers its handlers on.
// Each registered pattern is bound to its operation of the document, so routing
// costs one ServeMux lookup. In front of the generated handler it authenticates,
// rate-limits and validates the request with kin-openapi.
type validatingMux struct {
	s         *Server
	mux       *http.ServeMux
	paths     *http.ServeMux    // the same paths without methods: 405 versus 404
	allow     map[string]string // the methods of each path, for the Allow header of a 405
	ops       map[string]*operation
	valOpts   *openapi3filter.Options
	pathParam *regexp.Regexp
}

func newValidatingMux(s *Server, doc *openapi3.T, cfg Config) (*validatingMux, error) {
	m := &validatingMux{
		s:         s,
		mux:       http.NewServeMux(),
		paths:     http.NewServeMux(),
		allow:     map[string]string{},
		ops:       map[string]*operation{},
		pathParam: regexp.MustCompile(`\{([^}]+)\}`),
		valOpts: &openapi3filter.Options{
			// Authentication happens before validation, in ServeHTTP.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			// The body goes to the handler exactly as sent: decimals keep their digits.
			SkipSettingDefaults: true,
			// The body is validated from the bytes already read (validateBody).
			ExcludeRequestBody: true,
		},
	}
	doc.Servers = nil
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o := &operation{
				id:         op.OperationID,
				route:      &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op},
				secured:    op.Security == nil || len(*op.Security) > 0,
				bodyLimit:  cfg.BodyLimit,
				bodyValues: bodyValues(op),
				deadline:   s.deadlines.deadlineOf(method, path, s.webhookTimeout),
				probe:      path == "/healthz" || path == "/readyz",
			}
			if path == "/readyz" {
				o.deadline = 900 * time.Millisecond // within the probe's promised second, whatever the database does
			}
			if path == "/mail/send" {
				o.bodyLimit = cfg.MailBodyLimit
			}
			for _, param := range op.Parameters {
				if param.Value != nil && param.Value.In == "header" && param.Value.Name == "Idempotency-Key" {
					o.idempotent = true
				}
			}
			if text := bodyInvalidText(op); text != "" {
				o.tooMany = badRequest("request body: %s", text)
			}
			if v, ok := op.Extensions["x-error-value"].(string); ok {
				o.errorValue = v
			}
			for _, match := range m.pathParam.FindAllStringSubmatch(path, -1) {
				o.pathParams = append(o.pathParams, match[1])
			}
			m.ops[method+" "+path] = o
		}
		m.paths.HandleFunc(path, func(http.ResponseWriter, *http.Request) {})
		methods := slices.Sorted(maps.Keys(item.Operations()))
		m.allow[path] = strings.Join(methods, ", ")
	}
	return m, nil
}

// HandleFunc registers the generated handler of pattern ("METHOD /path").
func (m *validatingMux) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	op := m.ops[pattern]
	if op == nil {
		panic("impl: the generated code registers " + pattern + ", which is not in the document")
	}
	m.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		m.serveOperation(w, r, op, handler)
	})
}

// errNoOperation is the reply to a path that is not in the contract: HTTP
// 404 with the envelope. Its text repeats nothing of the request.
var errNoOperation = &Error{Code: CodeNotFound, HTTPStatus: http.StatusNotFound,
	Msg: "no such operation: the path is not in the contract"}

// ServeHTTP answers paths outside the contract with HTTP 404 and methods a
// path does not have with HTTP 405 (and Allow), each with the envelope.
func (m *validatingMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := checkPath(r); err != nil {
		m.s.writeError(w, r, err)
		return
	}
	if _, pattern := m.mux.Handler(r); pattern == "" {
		if _, p := m.paths.Handler(r); p != "" {
			w.Header().Set("Allow", m.allow[p])
			m.s.writeError(w, r, &Error{Code: CodeNotAllowed, HTTPStatus: http.StatusMethodNotAllowed,
				Msg: "method not allowed: the path takes only " + m.allow[p]})
			return
		}
		m.s.writeError(w, r, errNoOperation)
		return
	}
	m.mux.ServeHTTP(w, r)
}

func (m *validatingMux) serveOperation(w http.ResponseWriter, r *http.Request, op *operation, next func(http.ResponseWriter, *http.Request)) {
	ctx := r.Context()
	info := infoFrom(ctx)
	info.op = op
	if !op.probe {
		release, err := m.s.inFlight.acquire(ctx, op.deadline)
		if err != nil {
			m.s.writeError(w, r, err)
			return
		}
		defer release()
	}
	if op.secured {
		// Authentication reads the database too: it has the deadline of a read.
		var p *Principal
		ok := m.s.within(w, r, m.s.deadlines.Read, func(w http.ResponseWriter, r *http.Request) {
			found, err := m.s.authenticate(r)
			if err != nil {
				m.s.writeError(w, r, err)
				return
			}
			infoFrom(r.Context()).principal = found
			if err := m.s.limits.tokenRequest(withPrincipal(r.Context(), found), found); err != nil {
				m.s.writeError(w, r, err)
				return
			}
			p = found
		})
		if !ok || p == nil {
			return
		}
		ctx = withPrincipal(ctx, p)
	}
	// The body is read before the operation's deadline starts: a slow client is
	// bounded by the server's ReadTimeout, not by the database's deadline.
	release := func() {}
	if isLarge(r, op) {
		var err error
		if release, err = m.s.large.acquire(); err != nil {
			m.s.writeError(w, r, err)
			return
		}
	}
	// A large request's slot is this function's until the operation takes it
	// over (below): every way out before that gives it back.
	handedOver := false
	defer func() {
		if !handedOver {
			release()
		}
	}()
	body, err := readBody(r, op.bodyLimit)
	if err != nil {
		m.s.writeError(w, r, err)
		return
	}
	if err := checkQuery(r.URL.RawQuery); err != nil {
		m.s.writeError(w, r, err)
		return
	}
	if err := checkBodyText(body, op.bodyValues, op.tooMany); err != nil {
		m.s.writeError(w, r, err)
		return
	}
	r = r.WithContext(ctx)
	handedOver = true // within runs the function below in every case
	m.s.within(w, r, op.deadline, func(w http.ResponseWriter, r *http.Request) {
		defer release() // when the operation ends, even after its deadline: it holds the body till then
		// Parameters only: kin-openapi would read the body again for its
		// security check (our authentication is done already).
		r.Body = http.NoBody
		params := make(map[string]string, len(op.pathParams))
		for _, name := range op.pathParams {
			params[name] = r.PathValue(name)
		}
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: op.route, Options: m.valOpts}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			m.s.writeError(w, r, badRequest("%s", describeValidation(err)))
			return
		}
		if rb := op.route.Operation.RequestBody; rb != nil && rb.Value != nil {
			validated, err := validateBody(in, rb.Value, body)
			if err != nil {
				m.s.writeError(w, r, badRequest("%s", describeValidation(err)))
				return
			}
			r.Body = validated
		} else {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if key := r.Header.Get("Idempotency-Key"); op.idempotent && key != "" && info.principal != nil {
			raw := body
			body = nil // the handler's body holds it from here
			m.s.serveIdempotent(w, r, info.principal, key, raw, next)
			return
		}
		body = nil // the handler's body holds it from here
		next(w, r)
	})
}

// readBody reads the whole request body, refusing one larger than limit.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	tooLarge := badRequest("request body is larger than %d bytes", limit)
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	if r.ContentLength >= 0 {
		// One allocation of the declared size (io.ReadAll would grow its
		// buffer by doubling, leaving about twice the body behind as garbage);
		// net/http ends the body at its declared length.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, badRequest("request body could not be read")
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("request body could not be read")
	}
	if int64(len(body)) > limit {
		return nil, tooLarge
	}
	return body, nil
}

// describeDecodeError explains why a validated body still did not decode into
// its Go type (a date that does not exist, a number out of range) without Go
// type names.
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q: value does not fit %s", fieldPath(strings.Split(typeErr.Field, ".")), typeErr.Value)
	}
	var parseErr *time.ParseError
	if errors.As(err, &parseErr) {
		return fmt.Sprintf("date %q does not exist", parseErr.Value)
	}
	msg := firstLine(err.Error())
	msg = strings.TrimPrefix(msg, "can't decode JSON body: ")
	return msg
}
