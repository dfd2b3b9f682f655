package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/spf13/cobra"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/impl/mailer"
	"github.com/crmservice/crm/impl/webhook"
)

// serveFlags are the flags of serve; the environment gives the defaults of
// those not set.
type serveFlags struct {
	addr           string
	migrate        bool
	demo           bool
	rateLimit      float64
	rateBurst      int
	authFailLimit  float64
	authFailBurst  int
	trustedProxies string
	redisURL       string
	mail           bool
	webhooks       bool
	metricsAddr    string
	corsOrigins    string
}

// serveConfig is what serve runs with, checked before anything is printed.
type serveConfig struct {
	addr           string
	migrate        bool
	demo           bool
	rateLimit      float64
	rateBurst      int
	authFailLimit  float64
	authFailBurst  int
	trustedProxies []netip.Prefix
	redisURL       string
	mail           bool
	webhooks       bool
	secrets        *mailer.SecretBox // nil: no key, no mail or webhook worker, no webhook operations
	hookNetworks   []netip.Prefix    // WEBHOOK_ALLOWED_NETWORKS
	hookTimeout    time.Duration     // WEBHOOK_TIMEOUT
	connLifetime   time.Duration     // DB_CONN_MAX_LIFETIME, 0: none
	metricsAddr    string            // "off", "main" or a listen address (observe.go)
	corsOrigins    []string
	tracing        *tracingConfig    // nil: no traces
	deadlines      impl.Deadlines    // DEADLINE_READ, DEADLINE_LIST, DEADLINE_WRITE, DEADLINE_MAIL
	largeRequests  int               // LARGE_REQUESTS
	maxInFlight    int               // MAX_IN_FLIGHT
	citusRouting   bool              // CITUS_ROUTING
	citusNodes     map[string]string // CITUS_NODES
}

func (c *cli) serveCommand() *cobra.Command {
	var fl serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API until interrupted",
		Long: `Serve the HTTP API until interrupted (SIGINT or SIGTERM: it drains and exits 0).

Configuration is checked before anything is printed: the environment (PORT,
RATE_LIMIT, RATE_BURST, AUTH_FAILURE_LIMIT, AUTH_FAILURE_BURST, TRUSTED_PROXIES,
REDIS_URL, CRM_MAIL, CRM_WEBHOOKS, CRM_SECRET_KEY, WEBHOOK_ALLOWED_NETWORKS,
WEBHOOK_TIMEOUT, METRICS_ADDR, CORS_ALLOWED_ORIGINS, DEADLINE_READ, DEADLINE_LIST,
DEADLINE_WRITE, DEADLINE_MAIL, LARGE_REQUESTS, MAX_IN_FLIGHT, CITUS_ROUTING, CITUS_NODES and the OTEL_*
variables), the flags, and the listen addresses, which must be free. With CRM_SECRET_KEY set, a mail
worker delivers queued messages and polls mailboxes, and a webhook worker delivers the
events of webhook subscriptions (whose secrets the key encrypts; without it the
webhook operations answer 503). Webhooks reach only public addresses unless
WEBHOOK_ALLOWED_NETWORKS (CIDRs, comma-separated) allows more. With REDIS_URL set, the
rate limits hold across every process of the deployment. Every process purges the
expired idempotency keys of all accounts in the background, in batches.

Besides the API it serves its reference page at /docs and the contract at
/openapi.yaml and /openapi.json; the Prometheus metrics at /metrics of the API's
port (METRICS_ADDR=main) or of a port of their own (METRICS_ADDR=127.0.0.1:9464);
and, with OTEL_EXPORTER_OTLP_ENDPOINT set (http://collector:4318), OpenTelemetry
traces of every request and its database statements over OTLP/HTTP.`,
		Example: `  crm-server serve --migrate --demo
  PORT=9090 crm-server serve`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fl.config(cmd)
			if err != nil {
				return err
			}
			return c.serve(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.addr, "addr", "", `listen address, host:port (default ":$PORT", or ":8080")`)
	f.BoolVar(&fl.migrate, "migrate", false, "apply pending migrations before serving")
	f.BoolVar(&fl.demo, "demo", false, "load the demo account (once) and print a token of its admin")
	f.Float64Var(&fl.rateLimit, "rate-limit", 50, "requests per second per token, 0: no limit")
	f.IntVar(&fl.rateBurst, "rate-burst", 100, "burst of requests per token")
	f.Float64Var(&fl.authFailLimit, "auth-failure-limit", 20, "failed authentications per minute per client address before 429, 0: no limit")
	f.IntVar(&fl.authFailBurst, "auth-failure-burst", 20, "burst of failed authentications per client address")
	f.StringVar(&fl.trustedProxies, "trusted-proxies", "", "CIDRs of the reverse proxies whose X-Forwarded-For names the client address, comma-separated")
	f.StringVar(&fl.redisURL, "redis-url", "", "Redis that keeps the rate limits for every process (redis://host:6379/0; empty: each process limits alone)")
	f.BoolVar(&fl.mail, "mail", true, "deliver queued mail and poll mailboxes when CRM_SECRET_KEY is set (CRM_MAIL=off: false)")
	f.BoolVar(&fl.webhooks, "webhooks", true, "deliver webhook events when CRM_SECRET_KEY is set (CRM_WEBHOOKS=off: false)")
	// The help names the variables that give these defaults.
	f.Lookup("rate-limit").DefValue = "$RATE_LIMIT, or 50"
	f.Lookup("rate-burst").DefValue = "$RATE_BURST, or 100"
	f.Lookup("auth-failure-limit").DefValue = "$AUTH_FAILURE_LIMIT, or 20"
	f.Lookup("auth-failure-burst").DefValue = "$AUTH_FAILURE_BURST, or 20"
	f.Lookup("trusted-proxies").DefValue = "$TRUSTED_PROXIES"
	f.Lookup("redis-url").DefValue = "$REDIS_URL"
	fl.observeFlags(f)
	return cmd
}

// config reads the flags over the environment and checks them, without I/O.
func (fl serveFlags) config(cmd *cobra.Command) (serveConfig, error) {
	cfg := serveConfig{addr: fl.addr, migrate: fl.migrate, demo: fl.demo, rateLimit: fl.rateLimit, rateBurst: fl.rateBurst,
		authFailLimit: fl.authFailLimit, authFailBurst: fl.authFailBurst, redisURL: fl.redisURL, mail: fl.mail}
	changed := cmd.Flags().Changed
	if !changed("addr") {
		port := os.Getenv("PORT")
		if port == "" {
			port = "8080"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("PORT %q is not a port number (1 to 65535)", port)
		}
		cfg.addr = ":" + port
	}
	if _, port, err := net.SplitHostPort(cfg.addr); err != nil {
		return cfg, fmt.Errorf("--addr %q is not host:port, such as :8080 or 127.0.0.1:8080", cfg.addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return cfg, fmt.Errorf("--addr %q: the port is not a number from 0 to 65535", cfg.addr)
	}
	if v := os.Getenv("RATE_LIMIT"); v != "" && !changed("rate-limit") {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return cfg, fmt.Errorf("RATE_LIMIT %q is not a number", v)
		}
		cfg.rateLimit = n
	}
	if v := os.Getenv("RATE_BURST"); v != "" && !changed("rate-burst") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, fmt.Errorf("RATE_BURST %q is not a whole number", v)
		}
		cfg.rateBurst = n
	}
	if cfg.rateLimit < 0 || cfg.rateBurst < 0 {
		return cfg, fmt.Errorf("the rate limit (%g) and burst (%d) must not be negative", cfg.rateLimit, cfg.rateBurst)
	}
	if v := os.Getenv("AUTH_FAILURE_LIMIT"); v != "" && !changed("auth-failure-limit") {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return cfg, fmt.Errorf("AUTH_FAILURE_LIMIT %q is not a number", v)
		}
		cfg.authFailLimit = n
	}
	if v := os.Getenv("AUTH_FAILURE_BURST"); v != "" && !changed("auth-failure-burst") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, fmt.Errorf("AUTH_FAILURE_BURST %q is not a whole number", v)
		}
		cfg.authFailBurst = n
	}
	if cfg.authFailLimit < 0 || cfg.authFailBurst < 0 {
		return cfg, fmt.Errorf("the failed-authentication limit (%g) and burst (%d) must not be negative", cfg.authFailLimit, cfg.authFailBurst)
	}
	trusted := fl.trustedProxies
	if !changed("trusted-proxies") {
		trusted = os.Getenv("TRUSTED_PROXIES")
	}
	proxies, err := impl.ParseTrustedProxies(trusted)
	if err != nil {
		return cfg, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	cfg.trustedProxies = proxies
	if !changed("redis-url") {
		cfg.redisURL = os.Getenv("REDIS_URL")
	}
	if !changed("mail") {
		switch v := os.Getenv("CRM_MAIL"); v {
		case "", "on":
		case "off":
			cfg.mail = false
		default:
			return cfg, fmt.Errorf("CRM_MAIL %q is not on or off", v)
		}
	}
	cfg.webhooks = fl.webhooks
	if !changed("webhooks") {
		switch v := os.Getenv("CRM_WEBHOOKS"); v {
		case "", "on":
		case "off":
			cfg.webhooks = false
		default:
			return cfg, fmt.Errorf("CRM_WEBHOOKS %q is not on or off", v)
		}
	}
	nets, err := webhook.ParseNetworks(os.Getenv("WEBHOOK_ALLOWED_NETWORKS"))
	if err != nil {
		return cfg, fmt.Errorf("WEBHOOK_ALLOWED_NETWORKS: %w", err)
	}
	cfg.hookNetworks = nets
	if v := os.Getenv("WEBHOOK_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 5*time.Minute {
			return cfg, fmt.Errorf("WEBHOOK_TIMEOUT %q is not a duration from 100ms to 5m (such as 10s)", v)
		}
		cfg.hookTimeout = d
	}
	if v := os.Getenv("DB_CONN_MAX_LIFETIME"); v != "" && v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return cfg, fmt.Errorf("DB_CONN_MAX_LIFETIME %q is not a duration from 1s to 24h (such as 10m), or off", v)
		}
		cfg.connLifetime = d
	}
	// The key serves the API (webhook secrets) whether or not the workers run.
	box, err := mailer.NewSecretBox(os.Getenv(mailer.SecretKeyEnv))
	if err != nil && !errors.Is(err, mailer.ErrNoSecretKey) {
		return cfg, err
	}
	cfg.secrets = box
	if cfg.deadlines, err = deadlinesFromEnv(); err != nil {
		return cfg, err
	}
	if cfg.largeRequests, err = largeRequestsFromEnv(); err != nil {
		return cfg, err
	}
	if cfg.maxInFlight, err = maxInFlightFromEnv(); err != nil {
		return cfg, err
	}
	if cfg.citusRouting, err = citusRoutingFromEnv(); err != nil {
		return cfg, err
	}
	if cfg.citusNodes, err = citusNodesFromEnv(); err != nil {
		return cfg, err
	}
	if err := fl.observeConfig(changed, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// serve listens first, so that a taken port is told before any token is
// printed; then it prepares the database, prints the demo's token and serves
// until ctx ends, which is a normal end: it drains and returns nil.
func (c *cli) serve(ctx context.Context, cfg serveConfig) error {
	ln, err := listen(ctx, cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	metricsLn, err := listenMetrics(ctx, cfg.metricsAddr)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	err = c.serveOn(ctx, ln, metricsLn, cfg)
	if err != nil && ctx.Err() != nil {
		// Interrupted while preparing: what failed failed because of it.
		c.log.Info("interrupted before serving", "while", err.Error())
		return nil
	}
	return err
}

func (c *cli) serveOn(ctx context.Context, ln, metricsLn net.Listener, cfg serveConfig) error {
	applyMemoryLimit(c.log, osGetenv, osReadFile)
	url, err := databaseURL(ctx, c.log)
	if err != nil {
		return err
	}
	tracer, stopTracing, err := startTracing(ctx, cfg.tracing, c.log)
	if err != nil {
		return err
	}
	defer stopTracing()
	// No statement outlives the longest request deadline, even one whose
	// cancellation was lost (migrations lift it for themselves).
	// Every pool's sessions end after DB_CONN_MAX_LIFETIME.
	poolOpts := []db.Option{db.WithTracerProvider(tracer), db.WithStatementTimeout(cfg.deadlines.Longest()),
		db.WithMaxLifetime(cfg.connLifetime)}
	pool, err := db.Open(ctx, url, poolOpts...)
	if err != nil {
		return openError(err)
	}
	defer pool.Close()
	generic, err := db.OpenGeneric(ctx, url, poolOpts...)
	if err != nil {
		return openError(err)
	}
	defer generic.Close()
	if cfg.migrate {
		c.log.Info("migrating the schema (seconds on a new database)")
		done, err := db.Migrate(ctx, pool)
		if err != nil {
			return err
		}
		c.log.Info("migrated", "applied", done)
	}
	// Refuse to serve on a schema this build does not match.
	if err := db.CheckSchema(ctx, pool); err != nil {
		return err
	}
	// On Citus each request goes to the node of its account (CITUS_ROUTING).
	var router *db.Router
	if cfg.citusRouting {
		open := func(ctx context.Context, u string) (*sqlx.DB, error) {
			return db.Open(ctx, u, poolOpts...)
		}
		openGeneric := func(ctx context.Context, u string) (*sqlx.DB, error) {
			return db.OpenGeneric(ctx, u, poolOpts...)
		}
		router, err = db.NewRouter(ctx, url, &db.Node{DB: pool, Generic: generic},
			db.RouterOptions{Open: open, OpenGeneric: openGeneric, Log: c.log, Addresses: cfg.citusNodes})
		if err != nil {
			return err
		}
		defer router.Close()
	}
	hc := impl.Config{DB: pool, GenericDB: generic, Router: router, Log: c.log, RateLimit: cfg.rateLimit, RateBurst: cfg.rateBurst,
		AuthFailureLimit: cfg.authFailLimit, AuthFailureBurst: cfg.authFailBurst, TrustedProxies: cfg.trustedProxies,
		Secrets: cfg.secrets, WebhookAllowedNetworks: cfg.hookNetworks, WebhookTimeout: cfg.hookTimeout,
		TracerProvider: tracer, CORSOrigins: cfg.corsOrigins, Fault: os.Getenv("CRM_FAULT"),
		Deadlines: cfg.deadlines, LargeRequests: cfg.largeRequests, MaxInFlight: cfg.maxInFlight}
	switch hc.Fault {
	case "":
	case impl.IdempotencyFault:
		c.log.Warn("CRM_FAULT is set: this process exits on purpose at a fault point (for tests of crashes only)", "fault", hc.Fault)
	default:
		return fmt.Errorf("CRM_FAULT %q is not a fault point (%s)", hc.Fault, impl.IdempotencyFault)
	}
	var metrics *impl.Metrics
	if cfg.metricsAddr != metricsOff {
		metrics = impl.NewMetrics()
		hc.Metrics, hc.ServeMetrics = metrics, cfg.metricsAddr == metricsMain
	}
	if cfg.redisURL != "" {
		rdb, err := impl.OpenRedis(cfg.redisURL)
		if err != nil {
			return fmt.Errorf("REDIS_URL: %w", err)
		}
		defer rdb.Close()
		hc.Redis = rdb
		c.log.Info("rate limits shared through Redis", "addr", rdb.Options().Addr)
	}
	handler, err := impl.NewHandler(hc)
	if err != nil {
		return err
	}
	if cfg.demo {
		d, err := c.loadDemo(ctx, pool, demoServeTokenLabel)
		if err != nil {
			return err
		}
		c.log.Info("demo account ready", "account", d.AccountID, "created", d.Created)
		c.printTry(d, ln.Addr(), cfg.addr)
	}

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(c.log.Handler(), slog.LevelWarn),
	}
	defer startMail(ctx, c.log, pool, cfg.mail, cfg.secrets, metrics)()
	defer startWebhooks(ctx, c.log, pool, cfg)()
	defer startIdempotencyPurge(ctx, c.log, pool)()
	if metricsLn != nil {
		defer serveMetrics(metricsLn, metrics, c.log)()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(impl.EnvelopeListener(ln)) }()
	c.log.Info("serving", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	c.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// listen opens the listening socket, telling a taken port in one line.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("cannot listen on %s: the port is taken by another program (choose another with PORT or --addr)", addr)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("cannot listen on %s: permission denied (ports below 1024 need privileges)", addr)
	case err != nil:
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

// printTry prints the demo admin's token and a first request to try, through
// jq when it is installed, since the reply's value is a string of JSON.
func (c *cli) printTry(d *demo.Demo, bound net.Addr, addr string) {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	port := strconv.Itoa(bound.(*net.TCPAddr).Port)
	base := "http://" + net.JoinHostPort(host, port)
	curl := fmt.Sprintf("curl -s -H 'Authorization: Bearer %s' '%s/company/get?id=%d'", d.Token, base, d.Samples.CompanyID)
	fmt.Fprintf(c.out, "\nThe demo account is ready; its admin's token (valid 30 days): %s\nTry:\n\n", d.Token)
	if _, err := exec.LookPath("jq"); err == nil {
		fmt.Fprintf(c.out, "  %s | jq '.value | fromjson'\n\n", curl)
	} else {
		fmt.Fprintf(c.out, "  %s\n\n"+
			"The reply's value is a string of JSON: with jq installed (it is not), add\n"+
			"  | jq '.value | fromjson'\nto read it as JSON.\n\n", curl)
	}
	fmt.Fprintf(c.out, "Every operation is explained at %s/docs\n\n", base)
}

func (c *cli) dbCommand() *cobra.Command {
	start := &cobra.Command{
		Use:   "start [DATABASE]",
		Short: "Start the private PostgreSQL cluster and print the URL of a database in it",
		Long: `Start the private PostgreSQL cluster under ./.data (CRM_DATA_DIR) and print the URL
of a database in it: crm, or the one named, created when missing.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "crm"
			if len(args) == 1 {
				name = args[0]
			}
			url, err := localDatabase(cmd.Context(), c.log, name)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.out, url)
			return err
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the private PostgreSQL cluster (and the private Citus cluster, when it runs)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.Join(db.StopLocal(cmd.Context(), dataDir()), db.StopLocalCitus(cmd.Context(), citusDir()))
		},
	}
	return group("db", "Start and stop the private PostgreSQL cluster (used when DATABASE_URL is unset)", start, stop, c.citusCommand())
}

// openDB connects to DATABASE_URL, or to the database crm of the private cluster.
func openDB(ctx context.Context, log *slog.Logger) (*sqlx.DB, error) {
	url, err := databaseURL(ctx, log)
	if err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, url)
	if err != nil {
		return nil, openError(err)
	}
	return pool, nil
}

// openError tells why the database could not be opened: a refusal of the
// server by what it means, not in the driver's words.
func openError(err error) error {
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return err
	}
	switch {
	case pqErr.Code.Class() == "28": // invalid_authorization_specification, invalid_password
		return fmt.Errorf("the database server refused the user or password (SQLSTATE %s)", pqErr.Code)
	case pqErr.Code == "3D000": // invalid_catalog_name
		return fmt.Errorf("the database does not exist (SQLSTATE %s)", pqErr.Code)
	}
	return impl.DescribeDBError("connect to the database", err)
}

// databaseURL is DATABASE_URL, or the URL of the database crm of the private cluster.
func databaseURL(ctx context.Context, log *slog.Logger) (string, error) {
	if url := os.Getenv("DATABASE_URL"); url != "" {
		if err := checkDatabaseURL(url); err != nil {
			return "", err
		}
		return url, nil
	}
	return localDatabase(ctx, log, "crm")
}

// exampleDatabaseURL is what a valid DATABASE_URL looks like.
const exampleDatabaseURL = "postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full"

// checkDatabaseURL refuses a DATABASE_URL that is not a PostgreSQL URL before
// the driver sees it, naming the variable and showing a valid one (the
// driver's own words name neither). The value itself is never repeated: it
// may hold a password.
func checkDatabaseURL(raw string) error {
	u, err := neturl.Parse(raw)
	switch {
	case err != nil || u.Scheme == "" || u.Opaque != "":
		return fmt.Errorf("DATABASE_URL is not a URL: want %s", exampleDatabaseURL)
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return fmt.Errorf("DATABASE_URL is a %q URL, not a PostgreSQL one: want %s", u.Scheme, exampleDatabaseURL)
	}
	if _, err := pq.NewConnector(raw); err != nil {
		return fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: want %s", exampleDatabaseURL)
	}
	return nil
}

// localDatabase starts the private cluster when needed, creates the database
// name in it when missing, and returns its URL.
func localDatabase(ctx context.Context, log *slog.Logger, name string) (string, error) {
	if !validDatabaseName.MatchString(name) {
		return "", fmt.Errorf("database name %q: use lower-case letters, digits and _", name)
	}
	cluster, err := db.EnsureLocal(ctx, dataDir(), log)
	if err != nil {
		return "", err
	}
	admin, err := db.Open(ctx, cluster.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var exists bool
	if err := admin.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name); err != nil {
		return "", fmt.Errorf("look for database %s: %w", name, err)
	}
	if !exists {
		// The name is checked above; CREATE DATABASE takes no parameters.
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return cluster.URL(name), nil
}

var validDatabaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func dataDir() string {
	if dir := os.Getenv("CRM_DATA_DIR"); dir != "" {
		return dir
	}
	return ".data"
}

func citusDir() string { return filepath.Join(dataDir(), "citus") }

// errNoCitus is the error of `db citus check` where the extension is not
// installed; crm-server then exits with status 3, which make test-citus reads
// as "skip".
var errNoCitus = errors.New("the citus extension is not installed beside the PostgreSQL server binaries")

// errNoCitusDatabase is the error of `db citus check` on a database without
// the extension (exit status 3 too).
var errNoCitusDatabase = errors.New("the database of DATABASE_URL has no citus extension")

// citusCommand manages the private Citus cluster of the tests and benchmarks:
// a coordinator and two workers under .data/citus.
func (c *cli) citusCommand() *cobra.Command {
	check := &cobra.Command{
		Use:   "check",
		Short: "Check the Citus of DATABASE_URL (its version, the local plan cache), or where the extension is installed; exit 3 without Citus",
		Long: `With DATABASE_URL set: read the Citus release of that database (citus_version()) and
probe a node that holds a shard of accounts for the local plan cache's regression
of Citus 13.2.1 and 13.2.2 (a prepared fast-path statement executed 300 times in
one session, its memory compared before and after); warn on standard error when
the cluster has it. A build with upstream PR #8824's fix names itself 13.2.2 too:
the probe tells it apart. Exit 3 when the database has no citus extension.

Without DATABASE_URL: print where the citus extension is installed beside the
PostgreSQL server binaries (the private cluster's), exit 3 when it is not.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url := os.Getenv("DATABASE_URL"); url != "" {
				return c.checkCitus(cmd.Context(), url)
			}
			path, installed, err := db.CitusLibrary()
			if err != nil {
				return err
			}
			if !installed {
				return fmt.Errorf("%w: %s is missing", errNoCitus, path)
			}
			_, err = fmt.Fprintln(c.out, path)
			return err
		},
	}
	var fresh bool
	start := &cobra.Command{
		Use:   "start [DATABASE]",
		Short: "Start the private Citus cluster and print the coordinator's URL of a database in it",
		Long: `Start the private Citus cluster under ./.data/citus (a coordinator and two workers,
from the installed PostgreSQL binaries, where the citus extension is installed
beside them) and print the coordinator's URL of a database in it: crm, or the one
named, created on every node when missing (--fresh: dropped first).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "crm"
			if len(args) == 1 {
				name = args[0]
			}
			ctx := cmd.Context()
			cluster, err := db.EnsureLocalCitus(ctx, citusDir(), 2, name, c.log)
			if err == nil && fresh {
				if err = db.DropLocalCitusDatabase(ctx, citusDir(), name); err == nil {
					cluster, err = db.EnsureLocalCitus(ctx, citusDir(), 2, name, c.log)
				}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.out, cluster.URL(name))
			return err
		},
	}
	start.Flags().BoolVar(&fresh, "fresh", false, "drop the database first, so that it starts empty")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the private Citus cluster",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return db.StopLocalCitus(cmd.Context(), citusDir())
		},
	}
	spare := &cobra.Command{
		Use:   "spare [DATABASE]",
		Short: "Start a spare node beside the private Citus cluster and print its address",
		Long: `Start a spare node beside the private Citus cluster under ./.data/citus (start the
cluster first) with a database in it (crm, or the one named) and the citus
extension, not registered with the coordinator, and print its address
(host:port): a test adds it as a worker with citus_add_node and removes it again
(TestCitusClusterChanges).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "crm"
			if len(args) == 1 {
				name = args[0]
			}
			node, err := db.EnsureLocalCitusSpare(cmd.Context(), citusDir(), name, c.log)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.out, "127.0.0.1:%d\n", node.Port)
			return err
		},
	}
	var app string
	var accounts []int64
	audit := &cobra.Command{
		Use:   "audit",
		Short: "Check that the requests of a run each stayed on their account's node (make test-citus)",
		Long: `Read, from the logs of every node of the private Citus cluster whose coordinator
is DATABASE_URL, the commands that one node sent another on behalf of sessions
whose application_name is --app (servers connected with citus.log_remote_commands
on and log_min_messages at notice), and fail on any two-phase commit and on any
command a request sent to or from a node that holds none of its account
(--account: the accounts of the run). The coordinator's reads for the
background workers that cross accounts are allowed (docs/scale-out.md).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := os.Getenv("DATABASE_URL")
			if url == "" {
				return errors.New("DATABASE_URL: the coordinator of the private Citus cluster is required")
			}
			ctx := cmd.Context()
			pool, err := db.Open(ctx, url)
			if err != nil {
				return openError(err)
			}
			defer pool.Close()
			a, err := db.AuditCitusRequests(ctx, pool, url, app, accounts)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.out, "remote commands of %s: %d (background reads %d, two-phase commit %d, not allowed %d); run on the node itself: %v\n",
				app, a.Commands, a.Background, a.TwoPhase, len(a.Violations), a.Local)
			for _, v := range a.Violations {
				fmt.Fprintln(c.out, "  "+v)
			}
			if a.Commands == 0 && len(a.Local) == 0 {
				return fmt.Errorf("no command of %s in the logs: its sessions did not log (application_name, citus.log_remote_commands=on, log_min_messages=notice)", app)
			}
			if len(a.Violations) > 0 {
				return fmt.Errorf("%d remote commands of requests are not allowed: a request ran a two-phase commit or reached a node that holds none of its account", len(a.Violations))
			}
			return nil
		},
	}
	audit.Flags().StringVar(&app, "app", "", "the application_name of the servers' sessions")
	audit.Flags().Int64SliceVar(&accounts, "account", nil, "an account the run's requests served (repeat or separate by commas)")
	required(audit, "app", "account")
	return group("citus", "Check for Citus, start and stop the private Citus cluster (make test-citus, make bench)", check, start, stop, spare, audit)
}

// checkCitus reports the Citus of the database at url and warns when it has
// the local plan cache's regression (docs/scale-out.md, "Citus versions").
func (c *cli) checkCitus(ctx context.Context, url string) error {
	pool, err := db.Open(ctx, url)
	if err != nil {
		return openError(err)
	}
	defer pool.Close()
	citus, err := db.IsCitus(ctx, pool)
	if err != nil {
		return err
	}
	if !citus {
		return errNoCitusDatabase
	}
	var text string
	if err := pool.GetContext(ctx, &text, `SELECT citus_version()`); err != nil {
		return fmt.Errorf("read citus_version(): %w", err)
	}
	v, err := db.ParseCitusVersion(text)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "citus %s (%s)\n", v, text)
	class := v.LocalPlanCacheRegression()
	switch class {
	case db.RegressionAffected:
		fmt.Fprintf(c.out, "version: %s as released has the local plan cache's regression (fixed upstream by PR #8824)\n", v)
	case db.RegressionAbsent:
		fmt.Fprintf(c.out, "version: %s predates the local plan cache's regression of 13.2.1 and 13.2.2\n", v)
	default:
		fmt.Fprintf(c.out, "version: %s is newer than the releases known to have the local plan cache's regression (13.2.1, 13.2.2); the probe decides\n", v)
	}
	nodes, err := citusNodesFromEnv()
	if err != nil {
		return err
	}
	p, err := db.ProbeLocalPlanCache(ctx, pool, url, nodes, 300)
	if err != nil {
		fmt.Fprintf(c.out, "probe: not possible: %v\n", err)
		if class == db.RegressionAffected {
			fmt.Fprintf(c.err, "warning: Citus %s: every execution of a cached fast-path statement on a node that holds its shard plans it again and leaks about 57 KB (docs/scale-out.md, \"Citus versions\"); use a build with upstream PR #8824's fix or 13.2.0; until then DB_CONN_MAX_LIFETIME (such as 1m) bounds each session's growth\n", v)
		}
		return nil
	}
	fmt.Fprintf(c.out, "probe: %d executions of a prepared fast-path statement on %s: %+.0f bytes of the session's memory and %s each\n",
		p.Executions, p.Node, p.BytesPerExec, p.PerExec.Round(time.Microsecond))
	switch {
	case p.Leaks():
		fmt.Fprintf(c.err, "warning: Citus %s has the local plan cache's regression: the session grew by %.0f KB per execution of a cached fast-path statement, which it plans again each time (docs/scale-out.md, \"Citus versions\"); use a build with upstream PR #8824's fix or 13.2.0; until then DB_CONN_MAX_LIFETIME (such as 1m) bounds each session's growth\n", v, p.BytesPerExec/1024)
	case class == db.RegressionAffected:
		fmt.Fprintf(c.out, "local plan cache: sound (a %s build with the fix)\n", v)
	default:
		fmt.Fprintln(c.out, "local plan cache: sound")
	}
	return nil
}

// startIdempotencyPurge runs the purge of expired idempotency keys of every
// account in the background (every process runs one; their deletes do not
// conflict); the returned stop waits for its round to end.
func startIdempotencyPurge(ctx context.Context, log *slog.Logger, pool *sqlx.DB) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { impl.RunIdempotencyPurge(ctx, pool, log, time.Minute) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// startWebhooks runs the webhook worker when it is on and the key is set; the
// returned stop waits for deliveries under way to be recorded.
func startWebhooks(ctx context.Context, log *slog.Logger, pool *sqlx.DB, cfg serveConfig) (stop func()) {
	switch {
	case !cfg.webhooks:
		log.Info("webhook worker off (--webhooks=false or CRM_WEBHOOKS=off)")
		return func() {}
	case cfg.secrets == nil:
		log.Info("webhooks off: the webhook operations answer 503 and no webhook worker runs", "reason", mailer.ErrNoSecretKey.Error())
		return func() {}
	}
	w, err := impl.NewWebhookWorker(impl.WebhookConfig{DB: pool, Log: log, Secrets: cfg.secrets,
		AllowedNetworks: cfg.hookNetworks, Timeout: cfg.hookTimeout})
	if err != nil {
		log.Error("webhook worker not started", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
