package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// envAssignment is one variable that an environment file sets.
type envAssignment struct{ key, value string }

// parseEnvironmentFile reads an environment file as systemd's
// EnvironmentFile= does (systemd.exec(5); the state machine of
// parse_env_file_internal in systemd's src/basic/env-file.c):
//   - a line whose first non-blank character is # or ; is a comment, ended
//     by its line end even after a backslash (as since systemd 254; before,
//     such a backslash carried the comment on to the next line, so the
//     guide's file has none); a line without = is ignored;
//   - KEY=VALUE, blanks around the key and before the value dropped; there is
//     no comment after a value: "# …" there is part of it;
//   - unquoted, a backslash takes the next character literally, and at the
//     end of a line joins the next one; trailing blanks are dropped;
//   - '…' is literal; "…" takes \" \\ \` \$ as the character, a backslash at
//     the end of a line joins the next, and keeps any other backslash; after a
//     closing quote, blanks are skipped and the value goes on;
//   - keys that are not shell variable names are ignored (systemd warns).
//
// Later assignments of a key replace earlier ones; the order is the file's.
func parseEnvironmentFile(text string) []envAssignment {
	const (
		preKey = iota
		inKey
		preValue
		inValue
		valueEscape
		singleQuote
		doubleQuote
		doubleQuoteEscape
		comment
		commentEscape
	)
	isBlank := func(c byte) bool { return c == ' ' || c == '\t' }
	isNewline := func(c byte) bool { return c == '\n' || c == '\r' }
	validKey := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	var out []envAssignment
	var key, value []byte
	keyEnd, valueEnd := 0, -1 // lengths without trailing blanks
	push := func() {
		k := string(key[:keyEnd])
		v := string(value)
		if valueEnd >= 0 {
			v = string(value[:valueEnd])
		}
		if validKey.MatchString(k) {
			out = slices.DeleteFunc(out, func(a envAssignment) bool { return a.key == k })
			out = append(out, envAssignment{k, v})
		}
		key, value, keyEnd, valueEnd = key[:0], value[:0], 0, -1
	}
	state := preKey
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch state {
		case preKey:
			switch {
			case c == '#' || c == ';':
				state = comment
			case !isBlank(c) && !isNewline(c):
				state = inKey
				key = append(key, c)
				keyEnd = len(key)
			}
		case inKey:
			switch {
			case isNewline(c):
				state = preKey
				key, keyEnd = key[:0], 0
			case c == '=':
				state = preValue
				valueEnd = -1
			default:
				key = append(key, c)
				if !isBlank(c) {
					keyEnd = len(key)
				}
			}
		case preValue:
			switch {
			case isNewline(c):
				state = preKey
				push()
			case c == '\'':
				state = singleQuote
			case c == '"':
				state = doubleQuote
			case c == '\\':
				state = valueEscape
			case !isBlank(c):
				state = inValue
				value = append(value, c)
				valueEnd = len(value)
			}
		case inValue:
			switch {
			case isNewline(c):
				state = preKey
				push()
			case c == '\\':
				state = valueEscape
			default:
				value = append(value, c)
				if !isBlank(c) {
					valueEnd = len(value)
				}
			}
		case valueEscape:
			state = inValue
			if !isNewline(c) {
				value = append(value, c)
				valueEnd = len(value)
			}
		case singleQuote:
			if c == '\'' {
				state = preValue
				valueEnd = len(value)
			} else {
				value = append(value, c)
			}
		case doubleQuote:
			switch c {
			case '"':
				state = preValue
				valueEnd = len(value)
			case '\\':
				state = doubleQuoteEscape
			default:
				value = append(value, c)
			}
		case doubleQuoteEscape:
			state = doubleQuote
			switch {
			case strings.IndexByte("\"\\`$", c) >= 0:
				value = append(value, c)
			case c != '\n':
				value = append(value, '\\', c)
			}
		case comment:
			if c == '\\' {
				state = commentEscape
			} else if isNewline(c) {
				state = preKey
			}
		case commentEscape:
			state = comment
			if isNewline(c) {
				state = preKey
			}
		}
	}
	switch state {
	case preValue, inValue, valueEscape, singleQuote, doubleQuote, doubleQuoteEscape:
		push()
	}
	return out
}

// TestParseEnvironmentFile pins the rules of systemd's EnvironmentFile= that
// the deploy guide's file must live with.
func TestParseEnvironmentFile(t *testing.T) {
	got := parseEnvironmentFile("# comment\n  ; another\nA=1\nB = two words   \nC=x # not a comment\n" +
		"D='single # quoted' \nE=\"say \\\"hi\\\" \\$HOME \\n\"\nF=one\\\n  two\nG=a\\ b\\#c\nnot an assignment\n" +
		"# a comment \\\nH=not in the comment\n1X=bad key\nA=again\nI='x' 'y'\nJ=\nK=\"unterminated")
	want := []envAssignment{
		{"B", "two words"}, {"C", "x # not a comment"}, {"D", "single # quoted"}, {"E", `say "hi" $HOME \n`},
		{"F", "one  two"}, {"G", "a b#c"}, {"H", "not in the comment"}, {"A", "again"}, {"I", "xy"}, {"J", ""}, {"K", "unterminated"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed\n%q\nwant\n%q", got, want)
	}
}

// fencedBlock returns the fenced code block of a Markdown text whose first
// line is first.
func fencedBlock(t *testing.T, doc, first string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```\n").FindAllStringSubmatch(doc, -1) {
		if strings.HasPrefix(m[1], first+"\n") || strings.HasPrefix(m[1], first) && strings.Count(m[1], "\n") == 1 {
			return m[1]
		}
	}
	t.Fatalf("docs/deploy.md has no code block starting %q", first)
	return ""
}

// freeAddr is a free TCP address on the loopback interface.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestDeployGuide runs docs/deploy.md as printed: the environment file read
// by systemd's rules (and by sh, which must read the same values), the
// unit's ExecStartPre= and ExecStart= with that environment and nothing else,
// and the admin recipe. Only what names the site is replaced: the database,
// the addresses (free ports on 127.0.0.1; Redis at REDIS_URL or
// 127.0.0.1:6379; a collector of the test's own) and the key's placeholder;
// every other value goes to the server as printed.
func TestDeployGuide(t *testing.T) {
	dbtest.RequireOwnDatabase(t) // the recipe names user 5
	guide, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	unit := fencedBlock(t, string(guide), "# /etc/systemd/system/crm-server.service")
	envFile := fencedBlock(t, string(guide), "# /etc/crm-server/env  (mode 0600, owner root: it holds secrets)")
	recipe := strings.TrimSpace(fencedBlock(t, string(guide), "sudo sh -c 'set -a; . /etc/crm-server/env; exec crm-server token create"))

	// The unit names the file and the commands.
	directives := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			directives[k] = v
		}
	}
	if directives["EnvironmentFile"] != "/etc/crm-server/env" {
		t.Fatalf("the unit's EnvironmentFile= is %q, want the file the guide prints", directives["EnvironmentFile"])
	}
	const installed = "/usr/local/bin/crm-server"
	bin := builtServer(t)
	command := func(directive string) []string {
		t.Helper()
		words := strings.Fields(directives[directive])
		if len(words) < 2 || words[0] != installed {
			t.Fatalf("the unit's %s= is %q, want %s and a command", directive, directives[directive], installed)
		}
		return append([]string{bin}, words[1:]...)
	}
	migrate, serve := command("ExecStartPre"), command("ExecStart")

	// The file as systemd reads it: no value carries a comment or a blank,
	// and the values that name the site look like what they are.
	printed := parseEnvironmentFile(envFile)
	site := map[string]*regexp.Regexp{
		"PORT":                        regexp.MustCompile(`^[0-9]+$`),
		"DATABASE_URL":                regexp.MustCompile(`^postgres://[^\s#]+$`),
		"CRM_SECRET_KEY":              regexp.MustCompile(`^(…|[A-Za-z0-9+/]{43}=)$`),
		"METRICS_ADDR":                regexp.MustCompile(`^[0-9.]+:[0-9]+$`),
		"REDIS_URL":                   regexp.MustCompile(`^redis://[^\s#]+$`),
		"OTEL_EXPORTER_OTLP_ENDPOINT": regexp.MustCompile(`^https?://[^\s#]+$`),
	}
	for _, line := range strings.Split(envFile, "\n") {
		if strings.HasSuffix(line, "\\") {
			t.Errorf("a line of the file ends with a backslash, which systemd before 254 and after read differently: %q", line)
		}
	}
	for _, a := range printed {
		if strings.ContainsAny(a.value, "# \t") {
			t.Errorf("systemd reads %s as %q: a comment or a blank in the value", a.key, a.value)
		}
		if re := site[a.key]; re != nil && !re.MatchString(a.value) {
			t.Errorf("systemd reads %s as %q, which is not %s", a.key, a.value, re)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The same file for this machine: each line that sets a value of the
	// site is rewritten, keeping its quotes; every other line stays.
	url := dbtest.NewURL(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer collector.Close()
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	apiAddr, metricsAddr := freeAddr(t), freeAddr(t)
	_, apiPort, _ := net.SplitHostPort(apiAddr)
	local := map[string]string{
		"PORT":                        apiPort,
		"DATABASE_URL":                url,
		"CRM_SECRET_KEY":              base64.StdEncoding.EncodeToString(key),
		"METRICS_ADDR":                metricsAddr,
		"REDIS_URL":                   redisURL,
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
	}
	var lines []string
	for _, line := range strings.Split(envFile, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if value, mine := local[k]; ok && mine {
			if strings.HasPrefix(v, "'") {
				value = "'" + value + "'"
			}
			line = k + "=" + value
		}
		lines = append(lines, line)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "env")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed := parseEnvironmentFile(strings.Join(lines, "\n"))
	if len(parsed) != len(printed) {
		t.Fatalf("the local file sets %d variables, the printed one %d", len(parsed), len(printed))
	}
	// systemd's environment: the file's variables and its own few.
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir}
	for _, a := range parsed {
		env = append(env, a.key+"="+a.value)
	}

	// sh reads the file as systemd does.
	sh := exec.Command("sh", "-c", `set -a; . "$1"; env -0`, "sh", file)
	sh.Env = []string{"PATH=" + os.Getenv("PATH")}
	shOut, err := sh.Output()
	if err != nil {
		t.Fatalf("sh reading the file: %v", err)
	}
	shEnv := map[string]string{}
	for _, kv := range strings.Split(string(shOut), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			shEnv[k] = v
		}
	}
	for _, a := range parsed {
		if shEnv[a.key] != a.value {
			t.Errorf("sh reads %s as %q, systemd as %q", a.key, shEnv[a.key], a.value)
		}
	}

	// ExecStartPre=, then ExecStart= until it serves.
	pre := exec.Command(migrate[0], migrate[1:]...)
	pre.Env = env
	if out, err := pre.CombinedOutput(); err != nil {
		t.Fatalf("ExecStartPre= %s: %v\n%s", directives["ExecStartPre"], err, out)
	}
	srv := exec.Command(serve[0], serve[1:]...)
	srv.Env = env
	var log syncBuffer
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- srv.Wait() }()
	defer func() {
		_ = srv.Process.Kill()
	}()
	ready := false
	for deadline := time.Now().Add(time.Minute); !ready && time.Now().Before(deadline); {
		select {
		case err := <-ended:
			t.Fatalf("ExecStart= %s ended (%v) with the guide's environment:\n%s", directives["ExecStart"], err, log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + apiAddr + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
	}
	if !ready {
		t.Fatalf("no ready server on %s (PORT) within a minute:\n%s", apiAddr, log.String())
	}
	if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("no metrics on %s (METRICS_ADDR): %v", metricsAddr, err)
	} else {
		resp.Body.Close()
	}

	// The recipe names user 5: make ids up to it.
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	account := mustCommandEnv(t, env, bin, "account", "create", "--name", "Ops", "--tz", "UTC")
	for i := 0; ; i++ {
		id := mustCommandEnv(t, env, bin, "user", "create", "--account", account, "--name", "User", "--login", fmt.Sprintf("u%d@ops.example", i))
		if id == "5" {
			break
		}
		if n, _ := strconv.Atoi(id); n >= 5 {
			t.Skipf("the database gave user id %s: the recipe's --user 5 needs a fresh database", id)
		}
	}

	// The recipe as printed, but for the file's path; sudo is this user.
	fake := filepath.Join(dir, "bin")
	if err := os.Mkdir(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(fake, "crm-server")); err != nil {
		t.Fatal(err)
	}
	run := exec.Command("sh", "-c", strings.ReplaceAll(recipe, "/etc/crm-server/env", file))
	run.Env = []string{"PATH=" + fake + ":/usr/bin:/bin", "HOME=" + dir}
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("the admin recipe %s: %v\nstdout:\n%s\nstderr:\n%s", recipe, err, stdout.String(), stderr.String())
	}
	m := regexp.MustCompile(`^token ([0-9]+) \(shown only now\): (crm_\S+)\n$`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the admin recipe printed %q", stdout.String())
	}
	var row struct {
		User    int64  `db:"user_id"`
		Label   string `db:"label"`
		Expires bool   `db:"expires"`
	}
	if err := pool.Get(&row, `SELECT user_id, label, expires_at BETWEEN now() + interval '719 hours' AND now() + interval '721 hours' AS expires
		FROM tokens WHERE id = $1`, m[1]); err != nil || row.User != 5 || row.Label != "ops" || !row.Expires {
		t.Errorf("the recipe's token %s: %+v (%v)", m[1], row, err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+apiAddr+"/company/get?id=1", nil)
	req.Header.Set("Authorization", "Bearer "+m[2])
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if strings.Contains(body.String(), `"401"`) {
			t.Errorf("the server refused the recipe's token: %s", body.String())
		}
	}

	// systemd stops it with KillSignal=SIGTERM: it exits 0.
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		var exit *exec.ExitError
		if errors.As(err, &exit) || err != nil {
			t.Errorf("the server ended with %v on SIGTERM, want status 0:\n%s", err, log.String())
		}
	case <-time.After(40 * time.Second):
		t.Errorf("the server still runs 40 s (TimeoutStopSec=) after SIGTERM")
	}
	if strings.Contains(log.String(), `"level":"ERROR"`) {
		t.Errorf("the server logged errors:\n%s", log.String())
	}
}

// mustCommandEnv runs the built crm-server with env and returns its output.
func mustCommandEnv(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crm-server %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
