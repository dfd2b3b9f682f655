package main

import (
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// ownFlags are the flags each command takes, besides --help. Every command of
// the tree must be listed, so that a new one gets its help tested.
var ownFlags = map[string][]string{
	"crm-server":            {"verbose"},
	"serve":                 {"addr", "migrate", "demo", "rate-limit", "rate-burst", "auth-failure-limit", "auth-failure-burst", "trusted-proxies", "redis-url", "mail", "webhooks", "metrics-addr", "cors-allowed-origins"},
	"migrate":               nil,
	"demo":                  nil,
	"db":                    nil,
	"db start":              nil,
	"db stop":               nil,
	"db citus":              nil,
	"db citus check":        nil,
	"db citus start":        {"fresh"},
	"db citus stop":         nil,
	"db citus spare":        nil,
	"db citus audit":        {"app", "account"},
	"account":               nil,
	"account create":        {"name", "currency", "tz", "output"},
	"account list":          {"output"},
	"department":            nil,
	"department create":     {"account", "name", "output"},
	"department list":       {"account", "output"},
	"user":                  nil,
	"user create":           {"account", "name", "login", "role", "department", "kpi-users", "kpi-departments", "tz", "output"},
	"user list":             {"account", "output"},
	"user deactivate":       {"id"},
	"user activate":         {"id"},
	"token":                 nil,
	"token create":          {"user", "label", "ttl", "output"},
	"token list":            {"account", "user", "all", "output"},
	"token revoke":          {"id"},
	"directory":             nil,
	"directory add":         {"account", "code", "name", "sort", "controlled", "invoice", "output"},
	"kpi":                   nil,
	"kpi set":               {"user", "month", "metric", "plan", "name", "output"},
	"kpi remove":            {"user", "month", "metric"},
	"kpi list":              {"user", "output"},
	"mail-account":          nil,
	"mail-account create":   {"user", "address", "name", "smtp-host", "smtp-port", "smtp-security", "smtp-login", "smtp-password-file", "imap-host", "imap-port", "imap-security", "imap-login", "imap-password-file", "output"},
	"mail-account list":     {"account", "output"},
	"mail-account disable":  {"id"},
	"money-account":         nil,
	"money-account create":  {"account", "name", "currency", "output"},
	"money-account list":    {"account", "output"},
	"field":                 nil,
	"field add":             {"account", "module", "name", "title", "type", "output"},
	"field list":            {"account", "output"},
	"field remove":          {"account", "id"},
	"filter":                nil,
	"filter add":            {"account", "module", "name", "definition", "output"},
	"filter list":           {"account", "output"},
	"filter remove":         {"account", "id"},
	"contact-social":        nil,
	"contact-social set":    {"account", "contact", "network"},
	"completion":            nil,
	"completion bash":       {"no-descriptions"},
	"completion zsh":        {"no-descriptions"},
	"completion fish":       {"no-descriptions"},
	"completion powershell": {"no-descriptions"},
	"help":                  nil,
}

func TestHelp(t *testing.T) {
	// Every command of the tree is in ownFlags, and the other way round.
	root := newRoot(&cli{log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	seen := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		seen[pathOf(c)] = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path := range seen {
		if _, ok := ownFlags[path]; !ok {
			t.Errorf("command %q is not in ownFlags", path)
		}
	}
	for path := range ownFlags {
		if !seen[path] {
			t.Errorf("ownFlags names %q, which is no command", path)
		}
	}

	flagLine := regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z-]+)`)
	anyFlag := regexp.MustCompile(`(?:^|[\s"'(\[])--([a-z][a-z-]*)`)
	for path, own := range ownFlags {
		t.Run(path, func(t *testing.T) {
			args := strings.Fields(path)
			if path == "crm-server" {
				args = nil
			}
			out, err := command(t, append(args, "--help")...)
			if err != nil {
				t.Fatalf("%s --help: %v", path, err)
			}
			// The Flags section lists exactly the command's own flags (the
			// root's --verbose is every command's Global Flags) ...
			section := out
			if i := strings.Index(out, "\nFlags:\n"); i >= 0 {
				section = out[i:]
				if j := strings.Index(section, "\n\n"); j >= 0 {
					section = section[:j]
				}
			} else {
				t.Fatalf("%s --help has no Flags section:\n%s", path, out)
			}
			var listed []string
			for _, m := range flagLine.FindAllStringSubmatch(section, -1) {
				listed = append(listed, m[1])
			}
			want := append(slices.Clone(own), "help")
			slices.Sort(listed)
			slices.Sort(want)
			if !slices.Equal(listed, want) {
				t.Errorf("%s --help lists the flags %v, want %v\n%s", path, listed, want, out)
			}
			// ... and nothing in the help names another command's flag
			// (cobra's completion help names brew's --prefix).
			for _, m := range anyFlag.FindAllStringSubmatch(strings.ReplaceAll(out, "brew --prefix", "brew"), -1) {
				if !slices.Contains(want, m[1]) && m[1] != "verbose" {
					t.Errorf("%s --help mentions --%s, a flag it does not take:\n%s", path, m[1], out)
				}
			}
			// help COMMAND prints the same.
			if path != "crm-server" && path != "help" {
				again, err := command(t, append([]string{"help"}, args...)...)
				if err != nil || again != out {
					t.Errorf("help %s differs from %s --help (%v):\n%s", path, path, err, again)
				}
			}
		})
	}
}

func TestHelpCommand(t *testing.T) {
	help, err1 := command(t, "help")
	flag, err2 := command(t, "--help")
	if err1 != nil || err2 != nil || help != flag || !strings.HasPrefix(help, "crm-server serves the HTTP API") ||
		!strings.Contains(help, "\n  token          Issue, list and revoke bearer tokens\n") {
		t.Errorf("help (%v) and --help (%v) printed\n%s\n---\n%s", err1, err2, help, flag)
	}
}

func TestHelpOfTokenCreate(t *testing.T) {
	out, err := command(t, "token", "create", "-h")
	want := `Issue a bearer token to a user and print it, once: only its hash is stored.

The token acts with its user's role and rights. It prints
"token ID (shown only now): TOKEN", or with -o json {"id": ID, "token": "TOKEN"}.

Usage:
  crm-server token create [flags]

Examples:
  crm-server token create --user "$ANNA" --label laptop --ttl 720h

Flags:
  -h, --help               help for create
      --label string       what the token is for
  -o, --output text|json   text (a sentence with the id and the token) or json (default text)
      --ttl duration       lifetime, such as 720h (0: no expiry)
      --user ID            ID of the user (required)

Global Flags:
  -v, --verbose   log what an admin command does on standard error (as LOG_LEVEL does; serve always logs)
`
	if err != nil || out != want {
		t.Errorf("token create -h (%v):\n%s\nwant\n%s", err, out, want)
	}
}

func TestCompletion(t *testing.T) {
	for shell, start := range map[string]string{
		"bash": "# bash completion V2 for crm-server",
		"zsh":  "#compdef crm-server",
		"fish": "# fish completion for crm-server",
	} {
		out, err := command(t, "completion", shell)
		if err != nil || !strings.HasPrefix(out, start) || len(out) < 1000 {
			t.Errorf("completion %s (%v) printed %d bytes starting %.60q, want a script starting %q", shell, err, len(out), out, start)
		}
	}
	// What the scripts ask the binary for: values of a flag.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "kpi", "set", "--metric", ""},
			"companies_added\ntasks_done\ndeals_created\ndeal_sum\ninvoices_issued\ninvoice_sum\nincome\n:4\n"},
		{[]string{"__complete", "user", "create", "--role", ""}, "admin\nhead\nmember\n:4\n"},
		{[]string{"__complete", "token", "create", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"__complete", "tok"}, "token\tIssue, list and revoke bearer tokens\n:4\n"},
	} {
		out, err := command(t, tc.args...)
		if i := strings.Index(out, "Completion ended"); i >= 0 {
			out = out[:i]
		}
		if err != nil || out != tc.want {
			t.Errorf("crm-server %s printed (%v)\n%q\nwant\n%q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
