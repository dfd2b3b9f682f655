// Package sdk_test runs the TypeScript SDK's checks and tests (sdk/typescript) from `go test`,
// so that `make test` covers them: tsc --strict over the SDK and its tests, a file that must not
// compile, and `node --test` against a server started on a throwaway database.
package sdk_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/gen"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
)

const tsDir = "typescript"

// tools finds node and npm and installs the SDK's pinned devDependencies (npm ci) when
// they are missing, or skips the test saying why.
func tools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the TypeScript SDK's tests need Node.js with npm (skipped)", tool)
		}
	}
	// As `make test` does: npm ci when node_modules is missing or older than the lock.
	lock, err := os.Stat(filepath.Join(tsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if installed, err := os.Stat(filepath.Join(tsDir, "node_modules", ".package-lock.json")); err == nil && !installed.ModTime().Before(lock.ModTime()) {
		return
	}
	run(t, nil, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
}

// run runs a command in sdk/typescript and fails the test, with its output, when it fails.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, err := command(t, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func command(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = tsDir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestTypeScriptTypes checks that test/must-not-compile fails to compile under
// tsc --strict for the reasons it is there. (TestTypeScriptFlow compiles the SDK
// and its tests, with the @ts-expect-error checks of test/types.check.ts.)
func TestTypeScriptTypes(t *testing.T) {
	tools(t)
	out, err := command(t, nil, filepath.Join("node_modules", ".bin", "tsc"), "-p", "tsconfig.must-not-compile.json")
	if err == nil {
		t.Fatal("test/must-not-compile compiled; it must not")
	}
	for _, want := range []string{
		"misspelt.ts(8,", "TS2561", "'adress' does not exist in type 'CompanyInsertRequest'", // the misspelt field
		"misspelt.ts(10,", "TS2322", "Type 'string' is not assignable to type 'number'", // the wrong parameter type
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tsc output lacks %q:\n%s", want, out)
		}
	}
}

// TestTypeScriptFlow runs the SDK's node tests against this server on the demo data.
func TestTypeScriptFlow(t *testing.T) {
	tools(t)
	pool := dbtest.New(t)
	d, err := demo.Load(context.Background(), pool, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	handler, err := impl.NewHandler(impl.Config{DB: pool})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	// tsc --strict over the SDK and its tests, type checks included, into .build.
	run(t, nil, filepath.Join("node_modules", ".bin", "tsc"), "-p", "tsconfig.test.json")
	out := run(t, []string{
		"CRM_URL=" + srv.URL,
		"CRM_TOKEN=" + d.Token,
		"CRM_MEMBER_TOKEN=" + d.MemberToken,
		"CRM_USER_ID=" + strconv.FormatInt(d.AdminUserID, 10),
		"CRM_MAIL_ACCOUNT_ID=" + strconv.FormatInt(d.MailAccountID, 10),
		"CRM_SAMPLE_GOODS_ID=" + strconv.FormatInt(d.Samples.GoodsID, 10),
		"CRM_SAMPLE_COMPANY_ID=" + strconv.FormatInt(d.Samples.CompanyID, 10),
		"CRM_SAMPLE_DEAL_ID=" + strconv.FormatInt(d.Samples.DealID, 10),
		"CRM_SAMPLE_DOCUMENT_ID=" + strconv.FormatInt(d.Samples.DocumentID, 10),
	}, "node", "--test", "--test-reporter=spec", ".build/test/")
	t.Log(out)
}

// TestTypeScriptPackage packs the SDK as `npm pack` does for a release (prepack compiles it
// into dist), installs the tarball into an empty project and imports it there; its README
// opens with the five-line quick start, and its version is the contract's.
func TestTypeScriptPackage(t *testing.T) {
	tools(t)
	dest := t.TempDir()
	out := run(t, nil, "npm", "pack", "--pack-destination", dest, "--loglevel=error")
	tarballs, _ := filepath.Glob(filepath.Join(dest, "*.tgz"))
	if len(tarballs) != 1 {
		t.Fatalf("npm pack made %v:\n%s", tarballs, out)
	}
	listing, err := exec.Command("tar", "tzf", tarballs[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("tar: %v\n%s", err, listing)
	}
	for _, want := range []string{"package/README.md", "package/dist/index.js", "package/dist/index.d.ts", "package/dist/types.d.ts"} {
		if !strings.Contains(string(listing), want+"\n") {
			t.Errorf("the package lacks %s:\n%s", want, listing)
		}
	}
	if strings.Contains(string(listing), "package/src/") || strings.Contains(string(listing), "package/test/") {
		t.Errorf("the package holds sources or tests:\n%s", listing)
	}

	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"try-crm-sdk","version":"0.0.0","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", tarballs[0])
	install.Dir = project
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install of the tarball: %v\n%s", err, out)
	}
	imp := exec.Command("node", "--input-type=module", "-e",
		`import { createClient, CrmError, operations, version } from "@crmservice/crm-sdk"; `+
			`const c = createClient({ baseUrl: "http://127.0.0.1:1", token: "t" }); `+
			`console.log(version, typeof c.companyGet, typeof CrmError, Object.keys(operations).length);`)
	imp.Dir = project
	got, err := imp.CombinedOutput()
	if err != nil {
		t.Fatalf("import the installed package: %v\n%s", err, got)
	}
	doc, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	if want := doc.Info.Version + " function function "; !strings.HasPrefix(string(got), want) {
		t.Errorf("the installed package says %q, want %q…", got, want)
	}

	readme, err := os.ReadFile(filepath.Join(tsDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(readme), "```ts\n")
	code, _, _ := strings.Cut(rest, "```")
	if n := strings.Count(code, "\n"); n != 5 {
		t.Errorf("the README's quick start has %d lines, want 5:\n%s", n, code)
	}
}
