package impl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"

	"github.com/crmservice/crm"
	"github.com/crmservice/crm/impl/apidocs"
)

// The HTTP conventions a browser or a cache expects, around the API and apart
// from its operations (openapi.yaml, info.description, "HTTP conventions"):
//
//   - compression: gzip when the client accepts it and the reply is at least
//     compressMinSize bytes; the outermost layer, so that it compresses the
//     final reply (ETag, 304 and replays of other layers included);
//   - CORS: allowed origins from the configuration (none by default);
//     preflights are answered without authentication, whatever the origin;
//   - ETag and If-None-Match on the GET operations marked x-etag in the
//     contract, whose reply depends only on the records the caller sees.

// compressMinSize is the size from which a reply is compressed: below it
// gzip's framing and the work cost more than the bytes saved.
const compressMinSize = 1024

// compressLevel is gzip's level for replies. Level 1 of
// github.com/klauspost/compress compresses JSON about as well as the
// standard library's default level at several times its speed (BenchmarkCompression).
const compressLevel = gzip.BestSpeed

// newCompression returns the compression layer.
func newCompression() (func(http.Handler) http.HandlerFunc, error) {
	return gzhttp.NewWrapper(
		gzhttp.MinSize(compressMinSize),
		gzhttp.CompressionLevel(compressLevel),
		gzhttp.EnableZstd(false), // gzip only: every client has it, and one coding is one thing to test
		gzhttp.ContentTypes([]string{"application/json", "application/yaml", "text/html", "text/plain", "text/javascript", "text/css"}),
	)
}

// CORS headers.
const (
	corsAllowMethods  = "GET, POST"
	corsAllowHeaders  = "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, traceparent, tracestate"
	corsExposeHeaders = "X-Request-Id, ETag, Retry-After, WWW-Authenticate, Idempotent-Replayed"
	corsMaxAge        = "600"
)

// ParseCORSOrigins reads the origins that browsers may call the API from: a
// list separated by commas or spaces of http or https origins
// (scheme://host[:port], as a browser sends them in Origin), or "*" for any
// origin. Empty: none.
func ParseCORSOrigins(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f == "*" {
			out = append(out, f)
			continue
		}
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin such as https://app.example.com or http://localhost:3000", f)
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
			port = ""
		}
		origin := u.Scheme + "://" + host
		if strings.Contains(host, ":") {
			origin = u.Scheme + "://[" + host + "]"
		}
		if port != "" {
			origin += ":" + port
		}
		out = append(out, origin)
	}
	return out, nil
}

// corsPolicy answers preflights and marks the replies of allowed origins.
type corsPolicy struct {
	anyOrigin bool
	origins   map[string]bool
}

func newCORSPolicy(origins []string) *corsPolicy {
	c := &corsPolicy{origins: map[string]bool{}}
	for _, o := range origins {
		if o == "*" {
			c.anyOrigin = true
		}
		c.origins[o] = true
	}
	return c
}

func (c *corsPolicy) allows(origin string) bool { return c.anyOrigin || c.origins[origin] }

// wrap answers a CORS preflight (OPTIONS with Origin and
// Access-Control-Request-Method) itself, 204 without authentication, with
// the allowing headers when the origin is allowed and without them otherwise
// (the browser then refuses the call); it adds Access-Control-Allow-Origin to
// the replies of an allowed origin.
func (c *corsPolicy) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
		if origin == "" && !preflight {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		allowed := c.allows(origin)
		allowOrigin := origin
		if c.anyOrigin {
			allowOrigin = "*"
		} else {
			h.Add("Vary", "Origin")
		}
		if preflight {
			if info := infoFrom(r.Context()); info != nil {
				info.route = routePreflight
			}
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			if allowed {
				h.Set("Access-Control-Allow-Origin", allowOrigin)
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if allowed {
			h.Set("Access-Control-Allow-Origin", allowOrigin)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		next.ServeHTTP(w, r)
	})
}

// etagOperations are the operationIds marked x-etag: true in the contract.
func etagOperations(doc *openapi3.T) map[string]bool {
	ops := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if v, _ := op.Extensions["x-etag"].(bool); v && method == http.MethodGet {
				ops[op.OperationID] = true
			}
		}
	}
	return ops
}

// etags gives the successful replies of the operations in ops an ETag (a hash
// of the reply, weak since a compressed reply carries it too) and
// Cache-Control: private, no-cache, and answers 304 Not Modified when the
// request's If-None-Match names it. The reply is made in full either way: the
// saving is the transfer, and a client never sees a stale reply, since the
// tag is of exactly what it would have been sent.
func etags(ops map[string]bool, next http.Handler) http.Handler {
	if len(ops) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		ew := &etagWriter{ResponseWriter: w, ctx: r.Context(), ops: ops}
		next.ServeHTTP(ew, r)
		if ew.buf == nil {
			return
		}
		defer putETagBuffer(ew.buf)
		sum := xxhash.Sum64(ew.buf.Bytes())
		var raw [8]byte
		binary.BigEndian.PutUint64(raw[:], sum)
		tag := `W/"` + base64.RawURLEncoding.EncodeToString(raw[:]) + `"`
		h := w.Header()
		h.Set("ETag", tag)
		h.Set("Cache-Control", "private, no-cache")
		if etagMatches(r.Header.Values("If-None-Match"), tag) {
			h.Del("Content-Type")
			h.Del("Content-Length")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.WriteHeader(ew.status)
		_, _ = w.Write(ew.buf.Bytes())
	})
}

// etagWriter holds back the reply of an operation with ETags when it is a
// success, and passes every other reply through.
type etagWriter struct {
	http.ResponseWriter
	ctx    context.Context
	ops    map[string]bool
	status int
	decided,
	hold bool
	buf *bytes.Buffer
}

func (w *etagWriter) decide(status int) {
	if w.decided {
		return
	}
	w.decided, w.status = true, status
	info := infoFrom(w.ctx)
	// info.code is set by the error writer: only a success has none.
	if status == http.StatusOK && info != nil && info.op != nil && info.code == "" && w.ops[info.op.id] {
		w.hold, w.buf = true, etagBuffers.Get().(*bytes.Buffer)
	}
}

func (w *etagWriter) WriteHeader(status int) {
	w.decide(status)
	if !w.hold {
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *etagWriter) Write(b []byte) (int, error) {
	w.decide(http.StatusOK)
	if w.hold {
		return w.buf.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *etagWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// etagBuffers hold replies while their tag is computed; a reply is copied
// once into one of them (the writer's slice is not ours to keep).
var etagBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putETagBuffer returns b to the pool unless it grew past 1 MiB, which
// would keep a rare large reply's memory for ever.
func putETagBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		etagBuffers.Put(b)
	}
}

// etagMatches is If-None-Match's weak comparison of the tags listed (or *)
// with tag.
func etagMatches(values []string, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == want {
				return true
			}
		}
	}
	return false
}

// httpLayers puts around the API handler what is not an operation: the
// reference page and the contract (package apidocs), /metrics when it is
// served here, CORS, ETags, the observation of every request and, outermost,
// compression.
func (s *Server) httpLayers(cfg Config, api http.Handler) (http.Handler, error) {
	docs, err := apidocs.New(crm.OpenAPI())
	if err != nil {
		return nil, err
	}
	var metrics http.Handler
	if cfg.Metrics != nil && cfg.ServeMetrics {
		metrics = cfg.Metrics.Handler()
	}
	inner := newCORSPolicy(cfg.CORSOrigins).wrap(etags(s.etagOps, api))
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch {
			case metrics != nil && r.URL.Path == "/metrics":
				infoFrom(r.Context()).route = routeScrape
				metrics.ServeHTTP(w, r)
				return
			case docs.Handles(r.URL.Path):
				infoFrom(r.Context()).route = routeDocs
				docs.ServeHTTP(w, r)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
	compress, err := newCompression()
	if err != nil {
		return nil, fmt.Errorf("compression: %w", err)
	}
	return compress(s.observe(routed)), nil
}
