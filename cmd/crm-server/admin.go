package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
)

// The admin commands: each defines its own flags and calls one function of
// package impl, which tells what is wrong in one sentence.

func (c *cli) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the pending migrations of the database schema",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool, err := openDB(cmd.Context(), c.log)
			if err != nil {
				return err
			}
			defer pool.Close()
			done, err := db.Migrate(cmd.Context(), pool)
			for _, name := range done {
				fmt.Fprintln(c.out, "applied", name)
			}
			return err
		},
	}
}

func (c *cli) demoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Load the demo account (once) and print new tokens of its admin and a member",
		Long: `Load the demo account (once) and print new tokens of its admin and a member
(valid 30 days). The tokens an earlier crm-server demo printed are revoked, so that
loading again leaves two valid demo tokens, not two more each time; the server of
make run keeps its own pair the same way.

It prints key=value lines: account_id, admin_user_id, admin_mail_account_id,
created, token, member_token and the sample_* records the conformance cases read.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				d, err := c.loadDemo(cmd.Context(), pool, demoCommandTokenLabel)
				if err != nil {
					return err
				}
				// key=value lines, read by people and by .ci/conformance.sh
				_, err = fmt.Fprintf(c.out, "account_id=%d\nadmin_user_id=%d\nadmin_mail_account_id=%d\ncreated=%t\ntoken=%s\nmember_token=%s\n"+
					"sample_goods_id=%d\nsample_company_id=%d\nsample_deal_id=%d\nsample_document_id=%d\n",
					d.AccountID, d.AdminUserID, d.MailAccountID, d.Created, d.Token, d.MemberToken,
					d.Samples.GoodsID, d.Samples.CompanyID, d.Samples.DealID, d.Samples.DocumentID)
				return err
			})
		},
	}
}

// Labels of the demo tokens that crm-server demo and serve --demo issue: each
// revokes the tokens it issued before under its label (demo.ReplacingTokens),
// so that a day of make run leaves two valid demo tokens of each, not two
// more per start.
const (
	demoCommandTokenLabel = "demo: crm-server demo"
	demoServeTokenLabel   = "demo: serve --demo"
)

// loadDemo loads the demo account unless it exists, revokes the tokens of
// label that earlier loads issued and issues new ones, logging its progress
// every two seconds (on a terminal, a quiet admin command still prints it, so
// that a first load does not look stuck); demo and serve --demo call it.
func (c *cli) loadDemo(ctx context.Context, pool *sqlx.DB, label string) (*demo.Demo, error) {
	plain := !c.log.Enabled(ctx, slog.LevelInfo) && isTerminal(c.err)
	return demo.Load(ctx, pool, time.Now(), demo.ReplacingTokens(label), demo.WithProgress(2*time.Second, func(p demo.Progress) {
		if plain {
			if !p.Done && p.Rows > 0 {
				fmt.Fprintf(c.err, "demo: loading the demo data set: %s, %d of %d rows, about %s left\n", p.Step, p.Rows, p.Total, p.Left.Round(time.Second))
			}
			return
		}
		c.log.Info("loading the demo data set", "step", p.Step, "rows", p.Rows, "of", p.Total, "left", p.Left.Round(100*time.Millisecond))
	}))
}

// isTerminal tells whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (c *cli) accountCommand() *cobra.Command {
	var in impl.AccountInput
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create an account and print its id",
		Example: `  crm-server account create --name "Acme" --currency EUR --tz Europe/Riga`,
		Args:    noArgs,
	}
	f := create.Flags()
	f.StringVar(&in.Name, "name", "", "name of the account")
	f.StringVar(&in.BaseCurrency, "currency", "EUR", "base currency, an ISO 4217 code")
	f.StringVar(&in.TimeZone, "tz", "", "time zone of the account, an IANA name such as Europe/Riga")
	required(create, "name", "tz")
	out := outputFlag(create, "the id")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.CreateAccount(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(out, id)
		})
	}
	return group("account", "Create and list accounts", create, c.accountListCommand())
}

func (c *cli) departmentCommand() *cobra.Command {
	var account int64
	var name string
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a department of an account and print its id",
		Example: `  crm-server department create --account "$ACCOUNT" --name Sales`,
		Args:    noArgs,
	}
	f := create.Flags()
	f.Int64Var(&account, "account", 0, "`ID` of the account")
	f.StringVar(&name, "name", "", "name of the department, unique in the account")
	required(create, "account", "name")
	out := outputFlag(create, "the id")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.CreateDepartment(cmd.Context(), pool, account, name)
			if err != nil {
				return err
			}
			return c.printID(out, id)
		})
	}
	return group("department", "Create and list departments", create, c.departmentListCommand())
}

func (c *cli) userCommand() *cobra.Command {
	var in impl.UserInput
	var department int64
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a user and print their id",
		Long: `Create a user and print their id.

The role decides what the user sees: admin the whole account, head the records of
their department's users and their own, member their own.`,
		Example: `  crm-server user create --account "$ACCOUNT" --name "Anna Berg" --login anna@acme.example --role admin`,
		Args:    noArgs,
	}
	f := create.Flags()
	f.Int64Var(&in.AccountID, "account", 0, "`ID` of the account")
	f.StringVar(&in.Name, "name", "", "full name")
	f.StringVar(&in.Login, "login", "", "login (e-mail), unique in the account")
	f.StringVar(&in.Role, "role", impl.RoleMember, "admin, head or member")
	f.Int64Var(&department, "department", 0, "`ID` of the user's department (a head needs one)")
	f.BoolVar(&in.KPIUsersReport, "kpi-users", false, "right to the users' KPI report")
	f.BoolVar(&in.KPIDepartmentsReport, "kpi-departments", false, "right to the departments' KPI report")
	f.StringVar(&in.TimeZone, "tz", "", "time zone of the user (default: the account's)")
	required(create, "account", "name", "login")
	completeWords(create, "role", impl.RoleAdmin, impl.RoleHead, impl.RoleMember)
	out := outputFlag(create, "the id")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		if department != 0 {
			in.DepartmentID = &department
		}
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.CreateUser(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(out, id)
		})
	}
	setActive := func(use, short string, active bool) *cobra.Command {
		var id int64
		cmd := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
					return impl.SetUserActive(cmd.Context(), pool, id, active)
				})
			},
		}
		cmd.Flags().Int64Var(&id, "id", 0, "`ID` of the user")
		required(cmd, "id")
		return cmd
	}
	return group("user", "Create, list, deactivate and activate users", create, c.userListCommand(),
		setActive("deactivate", "Deactivate a user: their tokens stop working at once", false),
		setActive("activate", "Activate a deactivated user again: their tokens work again", true))
}

func (c *cli) tokenCommand() *cobra.Command {
	var user int64
	var label string
	var ttl time.Duration
	create := &cobra.Command{
		Use:   "create",
		Short: "Issue a bearer token to a user and print it, once",
		Long: `Issue a bearer token to a user and print it, once: only its hash is stored.

The token acts with its user's role and rights. It prints
"token ID (shown only now): TOKEN", or with -o json {"id": ID, "token": "TOKEN"}.`,
		Example: `  crm-server token create --user "$ANNA" --label laptop --ttl 720h`,
		Args:    noArgs,
	}
	f := create.Flags()
	f.Int64Var(&user, "user", 0, "`ID` of the user")
	f.StringVar(&label, "label", "", "what the token is for")
	f.DurationVar(&ttl, "ttl", 0, "lifetime, such as 720h (0: no expiry)")
	required(create, "user")
	out := outputFlag(create, "a sentence with the id and the token")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, token, err := impl.CreateToken(cmd.Context(), pool, user, label, ttl)
			if err != nil {
				return err
			}
			if *out == outJSON {
				return c.printJSON(struct {
					ID    int64  `json:"id"`
					Token string `json:"token"`
				}{id, token})
			}
			_, err = fmt.Fprintf(c.out, "token %d (shown only now): %s\n", id, token)
			return err
		})
	}
	var id int64
	revoke := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke a token by its id: requests with it are refused from then on",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				return impl.RevokeToken(cmd.Context(), pool, id)
			})
		},
	}
	revoke.Flags().Int64Var(&id, "id", 0, "`ID` of the token (token create prints it)")
	required(revoke, "id")
	return group("token", "Issue, list and revoke bearer tokens", create, c.tokenListCommand(), revoke)
}

func (c *cli) directoryCommand() *cobra.Command {
	var in impl.DirectoryValueInput
	codes := make([]string, 0, len(impl.DirectoryCodes()))
	for _, code := range impl.DirectoryCodes() {
		codes = append(codes, strconv.Itoa(code))
	}
	add := &cobra.Command{
		Use:   "add",
		Short: "Add a value to a directory of an account and print its id",
		Long: `Add a value to a directory of an account and print its id.

Directories: 9 counterparty types, 10 counterparty statuses, 29 categories, 35 kinds
of tasks, 40 deal types, 41 deal stages, 42 positions of contact persons, 43 statuses
of contact persons, 44 document types, 45 document statuses, 46 payment forms,
47 income and expense items, 48 agents, 49 counterparty groups.`,
		Example: `  crm-server directory add --account "$ACCOUNT" --code 9 --name Client --controlled`,
		Args:    noArgs,
	}
	f := add.Flags()
	f.Int64Var(&in.AccountID, "account", 0, "`ID` of the account")
	f.IntVar(&in.Code, "code", 0, "code of the directory: "+strings.Join(codes, ", "))
	f.StringVar(&in.Name, "name", "", "the value, unique in the directory")
	f.IntVar(&in.Sort, "sort", 0, "position in the directory's order")
	f.BoolVar(&in.Controlled, "controlled", false, "a counterparty type (9) watched by the forgotten-companies counter")
	f.BoolVar(&in.Invoice, "invoice", false, "a document type (44) counted as an issued invoice")
	required(add, "account", "code", "name")
	completeWords(add, "code", codes...)
	out := outputFlag(add, "the id")
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.AddDirectoryValue(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(out, id)
		})
	}
	return group("directory", "Add directory values", add)
}

// monthFlag is the value of --month: a month as YYYY-MM.
type monthFlag struct{ t time.Time }

func (m *monthFlag) String() string {
	if m.t.IsZero() {
		return ""
	}
	return m.t.Format("2006-01")
}

func (m *monthFlag) Set(v string) error {
	t, err := time.Parse("2006-01", v)
	if err != nil {
		return fmt.Errorf("want a month as YYYY-MM, such as 2026-11")
	}
	m.t = t
	return nil
}

func (m *monthFlag) Type() string { return "YYYY-MM" }

func (c *cli) kpiCommand() *cobra.Command {
	metrics := impl.KPIMetrics()
	metricHelp := "what the item measures: " + strings.Join(metrics, ", ")

	var in impl.KPIItemInput
	var setMonth monthFlag
	set := &cobra.Command{
		Use:   "set",
		Short: "Set the item of a metric in a user's KPI plan for a month and print its id",
		Long: `Set the item of a metric in a user's KPI plan for a month and print its id.

The plan is created when the user has none for the month; setting an item again
changes its plan value, and its name when --name is given.`,
		Example: `  crm-server kpi set --user "$ANNA" --month 2026-11 --metric income --plan 15000`,
		Args:    noArgs,
	}
	f := set.Flags()
	f.Int64Var(&in.UserID, "user", 0, "`ID` of the user")
	f.Var(&setMonth, "month", "month of the plan")
	f.StringVar(&in.Metric, "metric", "", metricHelp)
	f.StringVar(&in.Plan, "plan", "", "monthly plan value, a decimal greater than 0 with at most two decimals")
	f.StringVar(&in.Name, "name", "", "name of the item (default: the metric's, or the name it has)")
	required(set, "user", "month", "metric", "plan")
	completeWords(set, "metric", metrics...)
	setOut := outputFlag(set, "the id")
	set.RunE = func(cmd *cobra.Command, _ []string) error {
		in.Month = setMonth.t
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.SetKPIItem(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(setOut, id)
		})
	}

	var removeUser int64
	var removeMonth monthFlag
	var removeMetric string
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove the item of a metric from a user's KPI plan for a month",
		Long: `Remove the item of a metric from a user's KPI plan for a month; a plan left
without items is removed as well.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				return impl.RemoveKPIItem(cmd.Context(), pool, removeUser, removeMonth.t, removeMetric)
			})
		},
	}
	f = remove.Flags()
	f.Int64Var(&removeUser, "user", 0, "`ID` of the user")
	f.Var(&removeMonth, "month", "month of the plan")
	f.StringVar(&removeMetric, "metric", "", metricHelp)
	required(remove, "user", "month", "metric")
	completeWords(remove, "metric", metrics...)

	var listUser int64
	list := &cobra.Command{
		Use:   "list",
		Short: "List the items of a user's KPI plans, latest month first",
		Long: `List the items of a user's KPI plans, latest month first.

Text: a line per item with month, metric, measure, plan value and name, separated by
tabs. JSON: an array of {"id", "month", "metric", "measure", "plan", "name"}.`,
		Args: noArgs,
	}
	list.Flags().Int64Var(&listUser, "user", 0, "`ID` of the user")
	required(list, "user")
	listOut := outputFlag(list, "tab-separated lines")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			items, err := impl.ListKPIItems(cmd.Context(), pool, listUser)
			if err != nil {
				return err
			}
			if *listOut == outJSON {
				type item struct {
					ID      int64       `json:"id"`
					Month   string      `json:"month"`
					Metric  string      `json:"metric"`
					Measure string      `json:"measure"`
					Plan    json.Number `json:"plan"` // the exact decimal
					Name    string      `json:"name"`
				}
				out := make([]item, len(items))
				for i, it := range items {
					out[i] = item{it.ID, it.Month.Format("2006-01"), it.Metric, it.Measure, json.Number(it.Plan), it.Name}
				}
				return c.printJSON(out)
			}
			for _, it := range items {
				fmt.Fprintf(c.out, "%s\t%s\t%s\t%s\t%s\n", it.Month.Format("2006-01"), it.Metric, it.Measure, it.Plan, it.Name)
			}
			return nil
		})
	}
	return group("kpi", "Set, remove and list the items of users' KPI plans", set, remove, list)
}
