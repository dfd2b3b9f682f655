// Command crm-server runs the Customer Relationship Service and its admin commands.
//
//	crm-server serve [-addr :8080] [-migrate] [-demo]
//	crm-server migrate
//	crm-server db start [DATABASE] | db stop   (the private local cluster)
//	crm-server account create -name N -currency EUR -tz Europe/Riga
//	crm-server department create -account ID -name N
//	crm-server user create -account ID -name N -login L -role admin|head|member [-department ID] [-kpi-users] [-kpi-departments] [-tz Z]
//	crm-server token create -user ID [-label L] [-ttl 720h]
//	crm-server token revoke -id ID
//	crm-server directory add -account ID -code C -name N [-sort S] [-controlled] [-invoice]
//	crm-server mail-account create -user ID -address A [-name N] [-smtp-host H ...] [-imap-host H ...]
//	crm-server mail-account list -account ID | mail-account disable -id ID
//	crm-server kpi set -user ID -month YYYY-MM -metric M -plan V [-name N]
//	crm-server kpi remove -user ID -month YYYY-MM -metric M
//	crm-server kpi list -user ID
//	crm-server demo
//
// The database is DATABASE_URL; when it is unset, a private PostgreSQL cluster
// under ./.data (CRM_DATA_DIR) is started from the installed server binaries.
// CRM_SECRET_KEY (Base64 of 32 bytes) encrypts the passwords of mail accounts;
// serve runs the mail worker only when it is set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	demodata "github.com/crmservice/crm/impl/demo"
)

func main() {
	log := newLogger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "crm-server:", err)
		if errors.Is(err, errNoCitus) {
			os.Exit(3) // told apart by make test-citus, which then skips
		}
		os.Exit(1)
	}
}

func newLogger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if os.Getenv("LOG_LEVEL") == "debug" {
		opts.Level = slog.LevelDebug
	}
	if os.Getenv("LOG_FORMAT") == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

func run(ctx context.Context, log *slog.Logger, stdout io.Writer, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: crm-server serve|migrate|db|account|department|user|token|directory|mail-account|kpi|demo ... (see the package documentation)")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, log, stdout, args)
	case "db":
		return localDB(ctx, log, stdout, args)
	case "mail-account":
		return mailAccount(ctx, log, os.Stdin, stdout, args)
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	sub := ""
	if len(args) > 0 && cmd != "migrate" && cmd != "demo" {
		sub, args = args[0], args[1:]
	}
	action, ok := adminCommands(fs, stdout)[cmd+" "+sub]
	if !ok {
		return fmt.Errorf("unknown command %q", cmd+" "+sub)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := openDB(ctx, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if cmd != "migrate" {
		if err := db.CheckSchema(ctx, pool); err != nil {
			return err
		}
	}
	return action(ctx, pool)
}

// adminCommands defines the flags of each admin command on fs and returns what
// each command does once the flags are parsed.
func adminCommands(fs *flag.FlagSet, stdout io.Writer) map[string]func(context.Context, *sqlx.DB) error {
	var (
		name       = fs.String("name", "", "name")
		account    = fs.Int64("account", 0, "account id")
		currency   = fs.String("currency", "EUR", "base currency (ISO 4217)")
		tz         = fs.String("tz", "", "time zone (IANA name)")
		login      = fs.String("login", "", "login (e-mail) of the user")
		role       = fs.String("role", impl.RoleMember, "admin, head or member")
		department = fs.Int64("department", 0, "department id")
		kpiUsers   = fs.Bool("kpi-users", false, "right to the users' KPI report")
		kpiDepts   = fs.Bool("kpi-departments", false, "right to the departments' KPI report")
		user       = fs.Int64("user", 0, "user id")
		label      = fs.String("label", "", "what the token is for")
		ttl        = fs.Duration("ttl", 0, "lifetime of the token (0: no expiry)")
		id         = fs.Int64("id", 0, "token id")
		code       = fs.Int("code", 0, "directory code")
		sortOrder  = fs.Int("sort", 0, "sort order")
		controlled = fs.Bool("controlled", false, "counterparty type watched by forgotten companies")
		invoice    = fs.Bool("invoice", false, "document type counted as an invoice")
		month      = fs.String("month", "", "month of a KPI plan (YYYY-MM)")
		metric     = fs.String("metric", "", "what a KPI plan item measures: companies_added, tasks_done, deals_created, deal_sum, invoices_issued, invoice_sum or income")
		planValue  = fs.String("plan", "", "monthly plan value of a KPI plan item")
	)
	kpiMonth := func() (time.Time, error) {
		m, err := time.Parse("2006-01", *month)
		if err != nil {
			return m, fmt.Errorf("-month %q: want YYYY-MM", *month)
		}
		return m, nil
	}
	optional := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	printID := func(id int64, err error) error {
		if err == nil {
			fmt.Fprintln(stdout, id)
		}
		return err
	}
	return map[string]func(context.Context, *sqlx.DB) error{
		"migrate ": func(ctx context.Context, pool *sqlx.DB) error {
			done, err := db.Migrate(ctx, pool)
			for _, name := range done {
				fmt.Fprintln(stdout, "applied", name)
			}
			return err
		},
		"demo ": func(ctx context.Context, pool *sqlx.DB) error {
			// Progress goes to stderr (the admin commands have no logger of their
			// own), so that stdout keeps only the key=value lines.
			demo, err := demodata.Load(ctx, pool, time.Now(), demodata.WithProgress(2*time.Second, func(p demodata.Progress) {
				slog.Info("loading the demo data set", "step", p.Step, "rows", p.Rows, "of", p.Total, "left", p.Left.Round(100*time.Millisecond))
			}))
			if err != nil {
				return err
			}
			// key=value lines, read by people and by .ci/conformance.sh
			fmt.Fprintf(stdout, "account_id=%d\nadmin_user_id=%d\nadmin_mail_account_id=%d\ncreated=%t\ntoken=%s\nmember_token=%s\n",
				demo.AccountID, demo.AdminUserID, demo.MailAccountID, demo.Created, demo.Token, demo.MemberToken)
			fmt.Fprintf(stdout, "sample_goods_id=%d\nsample_company_id=%d\nsample_deal_id=%d\nsample_document_id=%d\n",
				demo.Samples.GoodsID, demo.Samples.CompanyID, demo.Samples.DealID, demo.Samples.DocumentID)
			return nil
		},
		"account create": func(ctx context.Context, pool *sqlx.DB) error {
			return printID(impl.CreateAccount(ctx, pool, impl.AccountInput{Name: *name, BaseCurrency: *currency, TimeZone: *tz}))
		},
		"department create": func(ctx context.Context, pool *sqlx.DB) error {
			return printID(impl.CreateDepartment(ctx, pool, *account, *name))
		},
		"user create": func(ctx context.Context, pool *sqlx.DB) error {
			return printID(impl.CreateUser(ctx, pool, impl.UserInput{
				AccountID: *account, Name: *name, Login: *login, Role: *role, DepartmentID: optional(*department),
				KPIUsersReport: *kpiUsers, KPIDepartmentsReport: *kpiDepts, TimeZone: *tz,
			}))
		},
		"token create": func(ctx context.Context, pool *sqlx.DB) error {
			id, token, err := impl.CreateToken(ctx, pool, *user, *label, *ttl)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "token %d (shown only now): %s\n", id, token)
			return nil
		},
		"token revoke": func(ctx context.Context, pool *sqlx.DB) error {
			return impl.RevokeToken(ctx, pool, *id)
		},
		"directory add": func(ctx context.Context, pool *sqlx.DB) error {
			return printID(impl.AddDirectoryValue(ctx, pool, impl.DirectoryValueInput{
				AccountID: *account, Code: *code, Name: *name, Sort: *sortOrder, Controlled: *controlled, Invoice: *invoice,
			}))
		},
		"kpi set": func(ctx context.Context, pool *sqlx.DB) error {
			m, err := kpiMonth()
			if err != nil {
				return err
			}
			return printID(impl.SetKPIItem(ctx, pool, impl.KPIItemInput{
				UserID: *user, Month: m, Metric: *metric, Plan: *planValue, Name: *name,
			}))
		},
		"kpi remove": func(ctx context.Context, pool *sqlx.DB) error {
			m, err := kpiMonth()
			if err != nil {
				return err
			}
			return impl.RemoveKPIItem(ctx, pool, *user, m, *metric)
		},
		"kpi list": func(ctx context.Context, pool *sqlx.DB) error {
			items, err := impl.ListKPIItems(ctx, pool, *user)
			if err != nil {
				return err
			}
			for _, it := range items {
				fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", it.Month.Format("2006-01"), it.Metric, it.Measure, it.Plan, it.Name)
			}
			return nil
		},
	}
}

// serve runs the HTTP server until SIGINT or SIGTERM, then drains it.
func serve(ctx context.Context, log *slog.Logger, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	addr := fs.String("addr", ":"+port, "listen address")
	migrate := fs.Bool("migrate", false, "apply pending migrations before serving")
	demo := fs.Bool("demo", false, "load the demo account (once) and print a token of its admin")
	rate := fs.Float64("rate-limit", envFloat("RATE_LIMIT", 50), "requests per second per token (0: no limit)")
	burst := fs.Int("rate-burst", int(envFloat("RATE_BURST", 100)), "burst of requests per token")
	failLimit := fs.Float64("auth-failure-limit", envFloat("AUTH_FAILURE_LIMIT", 20), "failed authentications per minute per client address before 429 (0: no limit)")
	failBurst := fs.Int("auth-failure-burst", int(envFloat("AUTH_FAILURE_BURST", 20)), "burst of failed authentications per client address")
	trusted := fs.String("trusted-proxies", os.Getenv("TRUSTED_PROXIES"), "CIDRs of the reverse proxies whose X-Forwarded-For names the client address, comma-separated")
	redisURL := fs.String("redis-url", os.Getenv("REDIS_URL"), "Redis that keeps the rate limits for every process (redis://host:6379/0; empty: each process limits alone)")
	mail := fs.Bool("mail", os.Getenv("CRM_MAIL") != "off", "deliver queued mail and poll mailboxes (needs CRM_SECRET_KEY; CRM_MAIL=off turns it off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	proxies, err := impl.ParseTrustedProxies(*trusted)
	if err != nil {
		return fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	cfg := impl.Config{RateLimit: *rate, RateBurst: *burst, AuthFailureLimit: *failLimit, AuthFailureBurst: *failBurst, TrustedProxies: proxies}
	if *redisURL != "" {
		rdb, err := impl.OpenRedis(*redisURL)
		if err != nil {
			return fmt.Errorf("REDIS_URL: %w", err)
		}
		defer rdb.Close()
		cfg.Redis = rdb
		log.Info("rate limits shared through Redis", "addr", rdb.Options().Addr)
	}
	url, err := databaseURL(ctx, log)
	if err != nil {
		return err
	}
	pool, err := db.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	generic, err := db.OpenGeneric(ctx, url)
	if err != nil {
		return err
	}
	defer generic.Close()
	if *migrate {
		done, err := db.Migrate(ctx, pool)
		if err != nil {
			return err
		}
		log.Info("migrated", "applied", done)
	}
	// Refuse to serve on a schema this build does not match.
	if err := db.CheckSchema(ctx, pool); err != nil {
		return err
	}
	cfg.DB, cfg.GenericDB, cfg.Log = pool, generic, log
	handler, err := impl.NewHandler(cfg)
	if err != nil {
		return err
	}
	if *demo {
		d, err := demodata.Load(ctx, pool, time.Now(), demodata.WithProgress(2*time.Second, func(p demodata.Progress) {
			log.Info("loading the demo data set", "step", p.Step, "rows", p.Rows, "of", p.Total, "left", p.Left.Round(100*time.Millisecond))
		}))
		if err != nil {
			return err
		}
		log.Info("demo account ready", "account", d.AccountID, "created", d.Created)
		var companyID int64
		if err := pool.GetContext(ctx, &companyID, `SELECT min(id) FROM companies WHERE account_id = $1`, d.AccountID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nThe demo account is ready; its admin's token (valid 30 days): %s\nTry:\n\n"+
			"  curl -s -H 'Authorization: Bearer %s' 'http://localhost%s/company/get?id=%d'\n\n",
			d.Token, d.Token, *addr, companyID)
	}

	srv := &http.Server{
		Addr:              *addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	defer startMail(ctx, log, pool, *mail)()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("serving", "addr", *addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// localDB starts the private cluster and prints the URL of a database in it
// (crm, or the name given, created when missing), or stops the cluster.
func localDB(ctx context.Context, log *slog.Logger, stdout io.Writer, args []string) error {
	switch {
	case len(args) >= 1 && len(args) <= 2 && args[0] == "start":
		name := "crm"
		if len(args) == 2 {
			name = args[1]
		}
		url, err := localDatabase(ctx, log, name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, url)
		return nil
	case len(args) == 1 && args[0] == "stop":
		return errors.Join(db.StopLocal(ctx, dataDir()), db.StopLocalCitus(ctx, filepath.Join(dataDir(), "citus")))
	case len(args) >= 2 && args[0] == "citus":
		return localCitus(ctx, log, stdout, args[1:])
	}
	return errors.New("usage: crm-server db start [DATABASE] | db stop | db citus check|start [--fresh] [DATABASE]|stop")
}

// localCitus checks for the citus extension, starts the private Citus cluster
// (a coordinator and two workers under .data/citus) and prints the URL of a
// database on it (crm, or the name given; --fresh drops it first), or stops it.
func localCitus(ctx context.Context, log *slog.Logger, stdout io.Writer, args []string) error {
	dir := filepath.Join(dataDir(), "citus")
	switch args[0] {
	case "check":
		path, installed, err := db.CitusLibrary()
		if err != nil {
			return err
		}
		if !installed {
			return fmt.Errorf("%w: %s is missing", errNoCitus, path)
		}
		fmt.Fprintln(stdout, path)
		return nil
	case "stop":
		return db.StopLocalCitus(ctx, dir)
	case "start":
		fresh := len(args) > 1 && args[1] == "--fresh"
		if fresh {
			args = args[1:]
		}
		name := "crm"
		if len(args) == 2 {
			name = args[1]
		}
		cluster, err := db.EnsureLocalCitus(ctx, dir, 2, name, log)
		if err == nil && fresh {
			if err = db.DropLocalCitusDatabase(ctx, dir, name); err == nil {
				cluster, err = db.EnsureLocalCitus(ctx, dir, 2, name, log)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, cluster.URL(name))
		return nil
	}
	return errors.New("usage: crm-server db citus check|start [--fresh] [DATABASE]|stop")
}

// errNoCitus is the error of `db citus check` where the extension is not installed.
var errNoCitus = errors.New("the citus extension is not installed beside the PostgreSQL server binaries")

// openDB connects to DATABASE_URL, or to the database crm of the private cluster.
func openDB(ctx context.Context, log *slog.Logger) (*sqlx.DB, error) {
	url, err := databaseURL(ctx, log)
	if err != nil {
		return nil, err
	}
	return db.Open(ctx, url)
}

// databaseURL is DATABASE_URL, or the URL of the database crm of the private cluster.
func databaseURL(ctx context.Context, log *slog.Logger) (string, error) {
	if url := os.Getenv("DATABASE_URL"); url != "" {
		return url, nil
	}
	return localDatabase(ctx, log, "crm")
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
		return "", err
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

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}
