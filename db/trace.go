package db

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/XSAM/otelsql"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Option changes how Open and OpenGeneric connect.
type Option func(*options)

type options struct {
	tracer trace.TracerProvider
}

// WithTracerProvider makes the pool's statements OpenTelemetry spans (client
// spans named after the driver call, with the statement's text) when they run
// within a traced request. Statements outside a trace, such as the mail
// worker's scans, make no span. A nil provider, or no option at all, leaves
// the driver unwrapped: tracing then costs nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// openPool opens a pool of lib/pq connections to url, through otelsql when
// tracing.
func openPool(url string, opts []Option) (*sqlx.DB, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.tracer == nil {
		return sqlx.Open("postgres", url)
	}
	connector, err := pq.NewConnector(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	traced := otelsql.OpenDB(connector,
		otelsql.WithTracerProvider(o.tracer),
		otelsql.WithAttributes(semconv.DBSystemNamePostgreSQL),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true,
			OmitRows:             true,
			// Only statements of a traced operation: background loops would
			// otherwise start a trace of their own every few seconds.
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
		}))
	return sqlx.NewDb(traced, "postgres"), nil
}
