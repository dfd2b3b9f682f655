// Package sdk_test runs the TypeScript SDK's checks and tests (sdk/typescript) from `go test`,
// so that `make test` covers them: tsc --strict over the SDK and its tests, a file that must not
// compile, and `node --test` against a server started on a throwaway database.
package sdk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
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
	lock, err := os.ReadFile(filepath.Join(tsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(lock))
	stamp := filepath.Join(tsDir, "node_modules", ".crm-lock-sha256")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == sum {
		return
	}
	run(t, nil, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
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
