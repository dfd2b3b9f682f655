package impl

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the Prometheus metrics of one server process: its requests, its
// limits, its database pools, its mail worker and the Go runtime, served in
// the Prometheus text format by Handler. A nil *Metrics collects nothing; the
// methods that count are safe to call on it.
//
// Every name begins with crm_ (the Go runtime's with go_ and process_, the
// pools' with go_sql_). The request metrics are labelled by operation: the
// operationId of openapi.yaml, or one of docs (the reference page and the
// contract), metrics (this endpoint), preflight (CORS preflights) and unknown
// (a path or method that is not an operation), so that their number is
// bounded whatever clients send.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	inFlight    prometheus.Gauge
	large       prometheus.Gauge
	clientGone  *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	deliveries  *prometheus.CounterVec
	polls       *prometheus.CounterVec
	fetched     prometheus.Counter

	mu       sync.Mutex
	routes   map[string]*routeMetrics
	pools    map[string]bool
	outboxes int
}

// Routes of the request metrics that are not operations of the contract.
const (
	routeDocs      = "docs"
	routeScrape    = "metrics"
	routePreflight = "preflight"
	routeUnknown   = "unknown"
)

// NewMetrics returns the metrics of a process, with the Go runtime's and the
// process's own already registered.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crm_http_requests_total",
			Help: "HTTP requests answered, by operation (operationId), envelope code (none for a success without code) and HTTP status.",
		}, []string{"operation", "code", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crm_http_request_duration_seconds",
			Help:    "Time from receiving a request's header to the end of its reply, by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crm_http_requests_in_flight",
			Help: "HTTP requests being answered now.",
		}),
		large: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crm_large_requests_in_flight",
			Help: "Requests with a body over 1 MiB holding one of the LARGE_REQUESTS slots now (from before the body is read until the operation ends).",
		}),
		clientGone: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crm_http_client_gone_total",
			Help: "Requests whose client closed its connection before the reply, by operation: the operation was cancelled and nothing was answered (crm_http_requests_total counts them with code and status 499, not as 500).",
		}, []string{"operation"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crm_rate_limit_rejections_total",
			Help: "Requests refused with 429, by limit: token (requests per token) or auth_failure (failed authentications per client address).",
		}, []string{"limit"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crm_mail_deliveries_total",
			Help: "Delivery attempts of queued mail by this process, by result: sent, retry (a temporary failure, tried again later) or failed (given up).",
		}, []string{"result"}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crm_mail_polls_total",
			Help: "Mailbox polls over IMAP by this process, by result: ok or failed.",
		}, []string{"result"}),
		fetched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crm_mail_fetched_messages_total",
			Help: "Messages fetched from mailboxes and stored by this process.",
		}),
		routes: map[string]*routeMetrics{},
		pools:  map[string]bool{},
	}
	m.reg.MustRegister(m.requests, m.duration, m.inFlight, m.large, m.clientGone, m.rateLimited, m.deliveries, m.polls, m.fetched,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, limit := range []string{"token", "auth_failure"} {
		m.rateLimited.WithLabelValues(limit)
	}
	for _, result := range []string{"sent", "retry", "failed"} {
		m.deliveries.WithLabelValues(result)
	}
	for _, result := range []string{"ok", "failed"} {
		m.polls.WithLabelValues(result)
	}
	return m
}

// Handler serves the metrics in the Prometheus text format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// WatchDB adds the statistics of a connection pool (open, in use and idle
// connections, waits for a connection and their time) as the go_sql_*
// metrics, labelled db_name=name. A second pool of the same name is ignored.
func (m *Metrics) WatchDB(name string, pool *sqlx.DB) {
	if m == nil || pool == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pools[name] {
		return
	}
	m.pools[name] = true
	m.reg.MustRegister(collectors.NewDBStatsCollector(pool.DB, name))
}

// WatchOutbox adds crm_mail_outbox_messages: the messages of every account
// that are queued, being sent or failed, counted when scraped (at most every
// outboxCountEvery; in between the last counts are served again). Only the
// first call has an effect.
func (m *Metrics) WatchOutbox(db *sqlx.DB, log *slog.Logger) {
	if m == nil || db == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outboxes > 0 {
		return
	}
	m.outboxes++
	m.reg.MustRegister(&outboxCollector{db: db, log: log, desc: prometheus.NewDesc("crm_mail_outbox_messages",
		"Messages of the mail outbox of every account by delivery state (queued, sending, failed), counted over the whole database; every process reports the same counts.",
		[]string{"state"}, nil)})
}

// routeMetrics are the request metrics of one operation, resolved once so that
// a request costs no lookup by label values.
type routeMetrics struct {
	name     string
	duration prometheus.Observer

	mu     sync.RWMutex
	counts map[codeStatus]prometheus.Counter
}

type codeStatus struct {
	code   string
	status int
}

// route returns the metrics of the operation or route name.
func (m *Metrics) route(name string) *routeMetrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.routes[name]
	if rm == nil {
		rm = &routeMetrics{name: name, duration: m.duration.WithLabelValues(name), counts: map[codeStatus]prometheus.Counter{}}
		m.routes[name] = rm
	}
	return rm
}

// done counts one answered request of the route.
func (rm *routeMetrics) done(m *Metrics, code string, status int, elapsed time.Duration) {
	rm.duration.Observe(elapsed.Seconds())
	if code == CodeClientGone {
		m.clientGone.WithLabelValues(rm.name).Inc()
	}
	key := codeStatus{code, status}
	rm.mu.RLock()
	c := rm.counts[key]
	rm.mu.RUnlock()
	if c == nil {
		label := code
		if label == "" {
			label = "none"
		}
		c = m.requests.WithLabelValues(rm.name, label, strconv.Itoa(status))
		rm.mu.Lock()
		rm.counts[key] = c
		rm.mu.Unlock()
	}
	c.Inc()
}

func (m *Metrics) requestStarted() {
	if m != nil {
		m.inFlight.Inc()
	}
}

func (m *Metrics) requestEnded() {
	if m != nil {
		m.inFlight.Dec()
	}
}

func (m *Metrics) largeRequestStarted() {
	if m != nil {
		m.large.Inc()
	}
}

func (m *Metrics) largeRequestEnded() {
	if m != nil {
		m.large.Dec()
	}
}

// rateLimitRejected counts a 429 of the limit ("token" or "auth_failure").
func (m *Metrics) rateLimitRejected(limit string) {
	if m != nil {
		m.rateLimited.WithLabelValues(limit).Inc()
	}
}

// mailDelivered counts a delivery attempt's result ("sent", "retry", "failed").
func (m *Metrics) mailDelivered(result string) {
	if m != nil {
		m.deliveries.WithLabelValues(result).Inc()
	}
}

// mailPolled counts a poll's result and the messages it stored.
func (m *Metrics) mailPolled(err error, stored int) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.polls.WithLabelValues(result).Inc()
	m.fetched.Add(float64(stored))
}

// outboxCountEvery is how long the outbox's counts are served again before
// they are counted anew, so that frequent scrapes of many processes do not
// add up to a load on the database.
const outboxCountEvery = 10 * time.Second

// outboxCollector counts the outbox's messages by state when scraped.
type outboxCollector struct {
	db   *sqlx.DB
	log  *slog.Logger
	desc *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	counts map[string]float64
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= outboxCountEvery {
		counts, err := countOutbox(c.db)
		if err != nil {
			if c.log != nil {
				c.log.Warn("metrics: count the mail outbox", "err", err)
			}
			return // no sample rather than a stale one
		}
		c.counts, c.at = counts, time.Now()
	}
	for _, state := range []string{"queued", "sending", "failed"} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.counts[state], state)
	}
}

// countOutbox counts the messages of every account that are queued, sending
// or failed. Each state is read from a partial index of its own
// (mail_messages_outbox, mail_messages_leases, mail_messages_failed), so the
// count costs in proportion to those messages, not to all mail.
func countOutbox(db *sqlx.DB) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	// On Citus the count reads every shard: lift a pool's refusal of that for
	// this transaction (as the mail worker's scans do; a placeholder setting on
	// plain PostgreSQL).
	if _, err := tx.ExecContext(ctx, `SET LOCAL citus.multi_task_query_log_level = 'off'`); err != nil {
		return nil, fmt.Errorf("allow a count over every shard: %w", err)
	}
	var rows []struct {
		State string `db:"state"`
		N     int64  `db:"n"`
	}
	// cross-account: the outbox's counts over every account, for the metrics.
	err = tx.SelectContext(ctx, &rows, `
		SELECT 'queued' AS state, count(*) AS n FROM mail_messages WHERE delivery_state = 'queued'
		UNION ALL
		SELECT 'sending', count(*) FROM mail_messages WHERE delivery_state = 'sending'
		UNION ALL
		SELECT 'failed', count(*) FROM mail_messages WHERE delivery_state = 'failed'`)
	if err != nil {
		return nil, fmt.Errorf("count: %w", err)
	}
	counts := make(map[string]float64, len(rows))
	for _, r := range rows {
		counts[r.State] = float64(r.N)
	}
	return counts, tx.Commit()
}
