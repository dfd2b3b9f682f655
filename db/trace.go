package db

import (
	"context"
	"database/sql/driver"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/XSAM/otelsql"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Option changes how Open and OpenGeneric connect.
type Option func(*options)

type options struct {
	tracer           trace.TracerProvider
	statementTimeout time.Duration
	maxLifetime      time.Duration
}

// WithMaxLifetime closes each session of the pool once it is d old (0: never),
// when it is next idle: a new session starts in its place. On a Citus whose
// sessions grow with every statement (13.2.1 and 13.2.2, docs/scale-out.md),
// it bounds what one session can hold; the server sets it from
// DB_CONN_MAX_LIFETIME.
func WithMaxLifetime(d time.Duration) Option {
	return func(o *options) { o.maxLifetime = d }
}

// WithStatementTimeout gives every session of the pool a statement_timeout of
// d (rounded up to milliseconds; 0: none): PostgreSQL stops any statement that
// runs longer, even when the client that started it is gone or its
// cancellation was lost. The server sets it to its longest request deadline.
func WithStatementTimeout(d time.Duration) Option {
	return func(o *options) { o.statementTimeout = d }
}

// withSessionSetting adds a setting to the connection URL (lib/pq sends the keys
// it does not know as session settings), in either of its forms.
func withSessionSetting(url, key, value string) (string, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		u, err := neturl.Parse(url)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return url + " " + key + "=" + value, nil
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
	db, err := openDriver(url, o)
	if err != nil {
		return nil, err
	}
	db.SetConnMaxLifetime(o.maxLifetime)
	return db, nil
}

// openDriver opens the pool of openPool with its session settings.
func openDriver(url string, o options) (*sqlx.DB, error) {
	if o.statementTimeout > 0 {
		ms := (o.statementTimeout + time.Millisecond - 1) / time.Millisecond
		var err error
		if url, err = withSessionSetting(url, "statement_timeout", strconv.FormatInt(int64(ms), 10)); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
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
