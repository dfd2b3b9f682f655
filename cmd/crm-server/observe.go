package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crmservice/crm/impl"
)

// What serve offers to watch it: the metrics (METRICS_ADDR), browsers'
// origins (CORS_ALLOWED_ORIGINS) and traces (the OTEL_* variables of
// OpenTelemetry).

// Values of METRICS_ADDR besides a listen address.
const (
	metricsOff  = "off"
	metricsMain = "main"
)

// observeFlags gives serve the flags of this file.
func (fl *serveFlags) observeFlags(f *pflag.FlagSet) {
	f.StringVar(&fl.metricsAddr, "metrics-addr", metricsOff,
		`where GET /metrics is served: "off", "main" (the API's own port) or a listen address of its own such as 127.0.0.1:9464`)
	f.StringVar(&fl.corsOrigins, "cors-allowed-origins", "",
		"origins that browsers may call the API from, comma-separated (https://app.example.com), or *; empty: none")
	f.Lookup("metrics-addr").DefValue = "$METRICS_ADDR, or off"
	f.Lookup("cors-allowed-origins").DefValue = "$CORS_ALLOWED_ORIGINS"
}

// observeConfig reads the settings of this file from the flags over the
// environment, and checks them without I/O.
func (fl serveFlags) observeConfig(changed func(string) bool, cfg *serveConfig) error {
	cfg.metricsAddr = fl.metricsAddr
	if v := os.Getenv("METRICS_ADDR"); v != "" && !changed("metrics-addr") {
		cfg.metricsAddr = v
	}
	switch cfg.metricsAddr {
	case "", metricsOff:
		cfg.metricsAddr = metricsOff
	case metricsMain:
	default:
		if _, port, err := net.SplitHostPort(cfg.metricsAddr); err != nil {
			return fmt.Errorf(`METRICS_ADDR %q is not "off", "main" or host:port, such as 127.0.0.1:9464`, cfg.metricsAddr)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("METRICS_ADDR %q: the port is not a number from 0 to 65535", cfg.metricsAddr)
		}
	}
	origins := fl.corsOrigins
	if !changed("cors-allowed-origins") {
		origins = os.Getenv("CORS_ALLOWED_ORIGINS")
	}
	list, err := impl.ParseCORSOrigins(origins)
	if err != nil {
		return fmt.Errorf("CORS_ALLOWED_ORIGINS: %w", err)
	}
	cfg.corsOrigins = list
	cfg.tracing, err = tracingFromEnv(os.Getenv)
	return err
}

// tracingConfig is where traces go; nil when tracing is off.
type tracingConfig struct {
	endpoint string // for the log: the exporter reads the variables itself
}

// tracingFromEnv reads the OpenTelemetry variables that decide whether serve
// exports traces: OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set switches it on, OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none off. Traces go over OTLP with HTTP and
// protobuf (a collector's port 4318); the exporter reads the other OTEL_*
// variables itself (headers, timeout, certificates, compression), and the
// SDK reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
// OTEL_TRACES_SAMPLER.
func tracingFromEnv(getenv func(string) string) (*tracingConfig, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch v := getenv("OTEL_TRACES_EXPORTER"); v {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER %q: this server exports traces with otlp (or none)", v)
	}
	name, endpoint := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		name, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" {
		return nil, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an http or https URL, such as http://localhost:4318", name, endpoint)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s %q: this server exports traces over http/protobuf only (a collector's port 4318)", v, p)
		}
	}
	return &tracingConfig{endpoint: endpoint}, nil
}

// startTracing returns the tracer provider of serve (nil when tracing is off)
// and the function that flushes and stops it.
func startTracing(ctx context.Context, cfg *tracingConfig, log *slog.Logger) (trace.TracerProvider, func(), error) {
	if cfg == nil {
		return nil, func() {}, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	// The service name is crm-server unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES name it (the later detector wins).
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("crm-server")),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	// The SDK reports failed exports through this handler, else through the
	// standard library's logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	log.Info("exporting traces over OTLP", "endpoint", cfg.endpoint)
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("tracing: flush the last spans", "err", err)
		}
	}, nil
}

// listenMetrics opens the metrics' own listener when METRICS_ADDR is an
// address (nil otherwise), telling a taken port in one line.
func listenMetrics(ctx context.Context, addr string) (net.Listener, error) {
	if addr == metricsOff || addr == metricsMain {
		return nil, nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("cannot listen on %s for the metrics: the port is taken by another program (choose another with METRICS_ADDR or --metrics-addr)", addr)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("cannot listen on %s for the metrics: permission denied (ports below 1024 need privileges)", addr)
	case err != nil:
		return nil, fmt.Errorf("cannot listen on %s for the metrics: %w", addr, err)
	}
	return ln, nil
}

// serveMetrics serves GET /metrics on ln until the returned function is called.
func serveMetrics(ln net.Listener, m *impl.Metrics, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("metrics listener", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}
