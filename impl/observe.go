package impl

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Observing requests: every reply carries a request id (X-Request-Id), every
// log line of a request carries it (and the trace's ids when the request is
// traced), the metrics count every request, and with a tracer provider each
// request is a server span that continues the caller's W3C trace context.
// Without a tracer provider no span is made at all.

// RequestIDHeader is the header that carries a request's id both ways.
const RequestIDHeader = "X-Request-Id"

// maxRequestID is the length of the longest request id taken from a client.
const maxRequestID = 128

// validRequestID reports whether a client's request id may be used as it is:
// 1 to 128 ASCII letters, digits and - _ . : (so that it cannot forge a log
// line or a header).
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// newRequestID is 32 random hexadecimal digits (128 bits, as a W3C trace id).
func newRequestID() string {
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], rand.Uint64())
	var text [32]byte
	hex.Encode(text[:], raw[:])
	return string(text[:])
}

// requestIDFrom is the id of the request being answered in ctx, or "".
func requestIDFrom(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// observe is the outermost layer of the API but compression: it gives the
// request its id and its requestInfo, counts it in the metrics and, when
// tracing, wraps it in a server span.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		info := &requestInfo{id: id, goneLogged: new(atomic.Bool)}
		ctx := context.WithValue(r.Context(), infoKey, info)
		var span trace.Span
		if s.tracer != nil {
			ctx = s.propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", r.Method),
					attribute.String("url.path", r.URL.Path),
					attribute.String("crm.request_id", id),
				))
		}
		s.metrics.requestStarted()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			// A panic has been answered by recoverAndLog; the one that reaches
			// here is http.ErrAbortHandler, which is still counted.
			s.metrics.requestEnded()
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			route := info.route
			if info.op != nil {
				route = info.op.id
			}
			if route == "" {
				route = routeUnknown
			}
			if s.metrics != nil {
				s.routeMetrics(route).done(s.metrics, info.code, status, time.Since(start))
			}
			if span != nil {
				endSpan(span, r, info, route, status)
			}
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// routeMetrics returns the metrics of a route, resolved at start-up for every
// operation and extra route (see NewHandler), or on first use otherwise.
func (s *Server) routeMetrics(route string) *routeMetrics {
	if rm := s.routes[route]; rm != nil {
		return rm
	}
	return s.metrics.route(route)
}

// endSpan names the server span by the operation's route and records its outcome.
func endSpan(span trace.Span, r *http.Request, info *requestInfo, route string, status int) {
	if info.op != nil {
		span.SetName(r.Method + " " + info.op.route.Path)
		span.SetAttributes(attribute.String("http.route", info.op.route.Path))
	} else {
		span.SetName(r.Method + " " + route)
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("crm.operation", route))
	if info.code != "" {
		span.SetAttributes(attribute.String("crm.code", info.code))
	}
	if p := info.principal; p != nil {
		span.SetAttributes(attribute.Int64("crm.account_id", p.AccountID), attribute.Int64("crm.user_id", p.UserID))
	}
	if info.code == CodeInternal || status >= 500 {
		span.SetStatus(codes.Error, "internal error")
	}
	span.End()
}

// requestLogHandler adds to every log record written in the context of a
// request that request's id, and the trace and span ids when it is traced.
type requestLogHandler struct{ slog.Handler }

func (h requestLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := requestIDFrom(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		rec.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestLogHandler) WithGroup(name string) slog.Handler {
	return requestLogHandler{h.Handler.WithGroup(name)}
}

// withRequestIDs returns log, whose lines written with a request's context
// carry its ids.
func withRequestIDs(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(requestLogHandler); ok {
		return log
	}
	return slog.New(requestLogHandler{log.Handler()})
}

// observing is what the Server keeps to observe requests.
type observing struct {
	metrics    *Metrics
	routes     map[string]*routeMetrics // by operationId or extra route, resolved at start-up
	tracer     trace.Tracer             // nil: no tracing
	propagator propagation.TextMapPropagator
	etagOps    map[string]bool
}

// newObserving resolves the metrics of every operation of doc and of the
// extra routes, and the tracer.
func newObserving(cfg Config, doc *openapi3.T) observing {
	o := observing{metrics: cfg.Metrics, routes: map[string]*routeMetrics{}, etagOps: etagOperations(doc)}
	if cfg.Metrics != nil {
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				o.routes[op.OperationID] = cfg.Metrics.route(op.OperationID)
			}
		}
		for _, name := range []string{routeDocs, routeScrape, routePreflight, routeUnknown} {
			o.routes[name] = cfg.Metrics.route(name)
		}
		cfg.Metrics.WatchDB("main", cfg.DB)
		if cfg.GenericDB != nil && cfg.GenericDB != cfg.DB {
			cfg.Metrics.WatchDB("generic", cfg.GenericDB)
		}
		cfg.Metrics.WatchOutbox(cfg.DB, cfg.Log)
	}
	if cfg.TracerProvider != nil {
		o.tracer = cfg.TracerProvider.Tracer("github.com/crmservice/crm/impl")
		o.propagator = propagation.TraceContext{}
	}
	return o
}
