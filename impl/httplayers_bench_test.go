package impl

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/routers"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/crmservice/crm/gen"
)

// discardSpans is an exporter that drops what it is given, so that a
// benchmark measures making, sampling and queueing spans, not sending them.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkHTTPLayers measures what the layers around the API cost a request
// (request id, metrics, traces, CORS, ETag, compression; httpconv.go,
// observe.go): "bare" is the API handler as before them (recoverAndLog
// around an operation that writes its envelope), the others add the layers.
// The difference is the layers' share of a request.
func BenchmarkHTTPLayers(b *testing.B) {
	doc, err := gen.GetSpec()
	if err != nil {
		b.Fatal(err)
	}
	small := []byte(`{"status":"success","error":"","code":null,"rows":2,"pages":1,"page":1,"value":"[{\"ID\":11,\"NAME\":\"Client\"},{\"ID\":14,\"NAME\":\"Supplier\"}]"}` + "\n")
	large := []byte(`{"status":"success","error":"","code":null,"rows":500,"pages":1,"page":1,"value":"[` +
		strings.Repeat(`{\"id\":1000001,\"name\":\"Baltic Office Supply 42\",\"city\":\"Riga\",\"created\":\"2026-11-01 09:00:00\"},`, 660) + `{}]"}` + "\n")
	op := &operation{id: "companyGet", route: &routers.Route{Path: "/company/get"}} // an operation with ETags
	api := func(body []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			infoFrom(r.Context()).op = op
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
		})
	}
	log := slog.New(slog.DiscardHandler)
	chain := func(cfg Config, body []byte) http.Handler {
		s := &Server{log: log}
		s.observing = newObserving(cfg, doc)
		h, err := s.httpLayers(cfg, s.recoverAndLog(api(body)))
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	for _, c := range []struct {
		name    string
		handler http.Handler
		header  map[string]string
	}{
		{"bare", (&Server{log: log}).recoverAndLog(api(small)), nil},
		{"layers", chain(Config{}, small), nil},
		{"layers+metrics", chain(Config{Metrics: NewMetrics()}, small), nil},
		{"layers+metrics+tracing", chain(Config{Metrics: NewMetrics(), TracerProvider: tp}, small),
			map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		{"layers+metrics+cors", chain(Config{Metrics: NewMetrics(), CORSOrigins: []string{"https://app.example.com"}}, small),
			map[string]string{"Origin": "https://app.example.com"}},
		{"bare 66KB", (&Server{log: log}).recoverAndLog(api(large)), nil},
		{"layers+metrics 66KB (ETag)", chain(Config{Metrics: NewMetrics()}, large), nil},
		{"layers+metrics 66KB (ETag, gzip)", chain(Config{Metrics: NewMetrics()}, large), map[string]string{"Accept-Encoding": "gzip"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/company/get?id=1", nil)
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.handler.ServeHTTP(discardWriter{h: http.Header{}}, r)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but a fresh header.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header {
	clear(w.h)
	return w.h
}
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
