// Command crm-server runs the Customer Relationship Service and its admin commands.
//
//	crm-server serve [--addr :8080] [--migrate] [--demo] [--rate-limit 50] [--rate-burst 100] [--mail=false]
//	crm-server migrate
//	crm-server demo
//	crm-server db start [DATABASE] | db stop   (the private local cluster)
//	crm-server db citus check | start [--fresh] [DATABASE] | stop   (a private Citus cluster, where Citus is installed)
//	crm-server account create --name N --tz Europe/Riga [--currency EUR]
//	crm-server department create --account ID --name N
//	crm-server user create --account ID --name N --login L [--role admin|head|member] [--department ID] [--kpi-users] [--kpi-departments] [--tz Z]
//	crm-server user deactivate --id ID | user activate --id ID
//	crm-server token create --user ID [--label L] [--ttl 720h]
//	crm-server token revoke --id ID
//	crm-server token list [--account ID] [--user ID] [--all]
//	crm-server account list | department list --account ID | user list --account ID
//	crm-server directory add --account ID --code C --name N [--sort S] [--controlled] [--invoice]
//	crm-server kpi set --user ID --month YYYY-MM --metric M --plan V [--name N]
//	crm-server kpi remove --user ID --month YYYY-MM --metric M
//	crm-server kpi list --user ID
//	crm-server mail-account create --user ID --address A [--name N] [--smtp-host H ...] [--imap-host H ...]
//	crm-server mail-account list --account ID | mail-account disable --id ID
//	crm-server money-account create --account ID --name N --currency C | money-account list --account ID
//	crm-server field add --account ID --module 1|20 --name N [--title T] [--type text|number|date|boolean]
//	crm-server field list --account ID | field remove --account ID --id ID
//	crm-server filter add --account ID --module 1|20|24 --name N --definition JSON
//	crm-server filter list --account ID | filter remove --account ID --id ID
//	crm-server contact-social set --account ID --contact ID [--network NAME=ADDRESS ...]
//	crm-server completion bash|zsh|fish|powershell
//
// `crm-server help` lists the commands and `crm-server COMMAND --help` explains
// one; each command takes only its own flags. A command that creates something
// prints its id (token create: its id and the token, once); with -o json it
// prints a JSON object instead ({"id": 12}; {"id": 12, "token": "crm_…"}), and
// the list commands print a table, or with -o json a JSON array. A failure is one line on
// standard error and exit status 1 (3 for db citus check where Citus is not
// installed).
//
// The database is DATABASE_URL; when it is unset, a private PostgreSQL cluster
// under ./.data (CRM_DATA_DIR) is started from the installed server binaries.
// CRM_SECRET_KEY (Base64 of 32 bytes) encrypts the passwords of mail accounts;
// serve runs the mail worker only when it is set. LOG_FORMAT (json, text) and
// LOG_LEVEL (debug, info, warn, error) shape the log on standard error, which
// the admin commands write only with --verbose or LOG_LEVEL set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crmservice/crm/db"
)

func main() {
	log, err := newLogger(os.Getenv("LOG_FORMAT"), os.Getenv("LOG_LEVEL"))
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, log, streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Args[1:])
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crm-server:", err)
		if errors.Is(err, errNoCitus) || errors.Is(err, errNoCitusDatabase) {
			os.Exit(3) // told apart by make test-citus, which then skips
		}
		os.Exit(1)
	}
}

// newLogger is the log on standard error: JSON lines unless format is text.
func newLogger(format, level string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{}
	switch level {
	case "", "info":
		opts.Level = slog.LevelInfo
	case "debug":
		opts.Level = slog.LevelDebug
	case "warn":
		opts.Level = slog.LevelWarn
	case "error":
		opts.Level = slog.LevelError
	default:
		return nil, fmt.Errorf("LOG_LEVEL %q is not debug, info, warn or error", level)
	}
	switch format {
	case "", "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("LOG_FORMAT %q is not json or text", format)
}

// streams are where a run reads and writes: help, ids and lists go to out.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// cli is what every command uses.
type cli struct {
	log *slog.Logger
	streams
	verbose bool // --verbose: the admin commands log as serve does
}

// quietUnlessAsked silences the log of every command but serve, unless
// --verbose or LOG_LEVEL asks for it: an admin command prints its result on
// standard output and, when it fails, one line on standard error.
func (c *cli) quietUnlessAsked(cmd *cobra.Command) {
	if c.verbose || os.Getenv("LOG_LEVEL") != "" || cmd.Name() == "serve" && cmd.Parent() == cmd.Root() {
		return
	}
	c.log = slog.New(slog.DiscardHandler)
}

// run executes the command named by args.
func run(ctx context.Context, log *slog.Logger, std streams, args []string) error {
	root := newRoot(&cli{log: log, streams: std})
	root.SetArgs(args)
	root.SetIn(std.in)
	root.SetOut(std.out)
	root.SetErr(std.err)
	return root.ExecuteContext(ctx)
}

// newRoot builds the command tree.
func newRoot(c *cli) *cobra.Command {
	root := &cobra.Command{
		Use:   "crm-server",
		Short: "The Customer Relationship Service: its HTTP server and admin commands",
		Long: `crm-server serves the HTTP API of the Customer Relationship Service and manages
what the API cannot write: accounts, departments, users, tokens, directory values,
KPI plans, mail accounts and money accounts; and, as admins can through the API,
additional fields, ready filters and social networks of contact persons.

The database is DATABASE_URL; when it is unset, a private PostgreSQL cluster under
./.data (CRM_DATA_DIR) is started from the installed server binaries.
CRM_SECRET_KEY (Base64 of 32 bytes) encrypts the passwords of mail accounts.
LOG_FORMAT (json, text) and LOG_LEVEL (debug, info, warn, error) shape the log,
which serve writes on standard error; the admin commands log only with --verbose
or LOG_LEVEL set, so that a failure is one line.

A command that creates something prints its id; -o json prints a JSON object;
the list commands print a table, or with -o json a JSON array.`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true, // main prints the one line
		SilenceUsage:  true, // a failure is not a reason to print the help
		RunE:          needsCommand,
		// Runs before cobra's own check of required flags, whose message
		// names neither the command nor its help.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			c.quietUnlessAsked(cmd)
			return checkRequired(cmd, args)
		},
	}
	root.PersistentFlags().BoolVarP(&c.verbose, "verbose", "v", false,
		"log what an admin command does on standard error (as LOG_LEVEL does; serve always logs)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		c.serveCommand(),
		c.migrateCommand(),
		c.demoCommand(),
		c.dbCommand(),
		c.accountCommand(),
		c.departmentCommand(),
		c.userCommand(),
		c.tokenCommand(),
		c.directoryCommand(),
		c.kpiCommand(),
		c.mailAccountCommand(),
		c.moneyAccountCommand(),
		c.fieldCommand(),
		c.filterCommand(),
		c.contactSocialCommand(),
	)
	return root
}

// group is a command that only holds commands, such as token (create, revoke).
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: needsCommand}
	g.AddCommand(subs...)
	return g
}

// needsCommand is what a command that only holds commands does when run:
// cobra would print its help and succeed, which hides a mistyped command from
// a script.
func needsCommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(": did you mean %q?", s[0])
		}
		return errors.New(msg)
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			names = append(names, sub.Name())
		}
	}
	what := "name a command"
	if cmd.HasParent() {
		what = pathOf(cmd) + " needs a command"
	}
	return fmt.Errorf("%s: %s (see %s --help)", what, strings.Join(names, ", "), cmd.CommandPath())
}

// pathOf names a command as main's messages do: after "crm-server: ".
func pathOf(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// noArgs refuses words after a command that takes only flags.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes only flags, not %q (see %s --help)", pathOf(cmd), args[0], cmd.CommandPath())
	}
	return nil
}

// singleDash finds the flag that pflag read as a run of one-letter flags, as
// it reads -user (the syntax of crm-server before its flags took two dashes).
var singleDash = regexp.MustCompile(`^unknown shorthand flag: '.' in -([a-z][a-z0-9-]+)`)

// flagError names the command and where its flags are explained.
func flagError(cmd *cobra.Command, err error) error {
	if m := singleDash.FindStringSubmatch(err.Error()); m != nil && cmd.Flags().Lookup(m[1]) != nil {
		err = fmt.Errorf("flags take two dashes: --%s, not -%s", m[1], m[1])
	}
	return fmt.Errorf("%s: %w (see %s --help)", pathOf(cmd), err, cmd.CommandPath())
}

// requiredAnnotation marks the flags that required gave a command.
const requiredAnnotation = "crm-server-required"

// required marks flags that a command cannot do without; checkRequired
// refuses a run without them.
func required(cmd *cobra.Command, flags ...string) {
	for _, name := range flags {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			panic("crm-server: no flag --" + name) // a flag name mistyped in this file
		}
		f.Usage += " (required)"
		_ = cmd.Flags().SetAnnotation(name, requiredAnnotation, []string{"true"})
		_ = cmd.MarkFlagRequired(name) // completion offers required flags first
	}
}

// checkRequired names every required flag missing, in one sentence (cobra's
// own check does not name the command).
func checkRequired(cmd *cobra.Command, _ []string) error {
	var missing []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if len(f.Annotations[requiredAnnotation]) > 0 && !f.Changed {
			missing = append(missing, "--"+f.Name)
		}
	})
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %s is required (see %s --help)", pathOf(cmd), missing[0], cmd.CommandPath())
	}
	return fmt.Errorf("%s: %s and %s are required (see %s --help)", pathOf(cmd),
		strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1], cmd.CommandPath())
}

// withDB opens the database, checks that its schema matches this build, and
// runs fn on it.
func (c *cli) withDB(ctx context.Context, fn func(*sqlx.DB) error) error {
	pool, err := openDB(ctx, c.log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := db.CheckSchema(ctx, pool); err != nil {
		return err
	}
	return fn(pool)
}

// output is the value of -o/--output: what a command prints.
type output string

const (
	outText output = "text"
	outJSON output = "json"
)

func (o *output) String() string { return string(*o) }
func (o *output) Type() string   { return "text|json" }

func (o *output) Set(v string) error {
	switch output(v) {
	case outText, outJSON:
		*o = output(v)
		return nil
	}
	return errors.New("want text or json")
}

// outputFlag gives cmd the flag -o/--output.
func outputFlag(cmd *cobra.Command, text string) *output {
	o := outText
	cmd.Flags().VarP(&o, "output", "o", "text ("+text+") or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return &o
}

// printID prints the id of what a command created.
func (c *cli) printID(o *output, id int64) error {
	if *o == outJSON {
		return c.printJSON(struct {
			ID int64 `json:"id"`
		}{id})
	}
	_, err := fmt.Fprintln(c.out, id)
	return err
}

func (c *cli) printJSON(v any) error {
	return json.NewEncoder(c.out).Encode(v)
}

// completeWords completes a flag's value from a fixed list.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}
