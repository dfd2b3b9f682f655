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
		"misspelt.ts(14,", "TS2339", "Property 'nmae_zz' does not exist on type 'Company'", // a misspelt member of the card
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

// cleanCopy copies the files of sdk/typescript that a clone has (tracked, or new and not
// ignored: no node_modules, no .build) into a new directory, and returns it.
func cleanCopy(t *testing.T) string {
	t.Helper()
	list, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", tsDir).Output()
	if err != nil {
		t.Skipf("git ls-files in sdk/typescript: %v (the package's test needs the repository's git)", err)
	}
	dir := filepath.Join(t.TempDir(), "crm-sdk")
	n := 0
	for _, f := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		rel, err := filepath.Rel(tsDir, f) // git prints it relative to sdk/
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("git ls-files -- %s listed %s", tsDir, f)
		}
		data, err := os.ReadFile(filepath.Join(tsDir, rel))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if _, err := os.Stat(filepath.Join(dir, "dist", "esm", "index.js")); err != nil || n < 10 {
		t.Fatalf("the clean copy of sdk/typescript (%d files) has no dist/esm/index.js: %v", n, err)
	}
	return dir
}

// consumer is a project of its own that uses the SDK (installed by spec, with npm install)
// from TypeScript under tsc --strict, as an ES module or a CommonJS one.
const consumerMain = `import { createClient, CrmError, type CompanyCard } from "@crmservice/crm-sdk";

declare const process: { argv: string[]; exitCode?: number };

async function main(): Promise<void> {
  const [url, token, id] = process.argv.slice(2);
  const crm = createClient({ baseUrl: url!, token: token! });
  const card: CompanyCard = await crm.companyGet({ id: Number(id) });
  let missing = "";
  try {
    await crm.companyGet({ id: 999999999 });
  } catch (e) {
    if (e instanceof CrmError) missing = e.code;
  }
  console.log(JSON.stringify({ id: card.company.id, missing }));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
`

// TestTypeScriptPackage installs the SDK as its users do, from a copy of sdk/typescript that
// holds only what a clone has (nothing installed or built there first): by `npm install
// <directory>` and from the tarball of `npm pack`, each into an ES module project and a
// CommonJS one, which compile a call under tsc --strict (with the types of their format),
// resolve the package to its ESM or CommonJS build, and run against a server. Its README
// opens with the five-line quick start, and its version is the contract's.
func TestTypeScriptPackage(t *testing.T) {
	tools(t)
	tsc, err := filepath.Abs(filepath.Join(tsDir, "node_modules", ".bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	clean := cleanCopy(t)
	dest := t.TempDir()
	pack := exec.Command("npm", "pack", "--pack-destination", dest, "--loglevel=error")
	pack.Dir = clean
	out, err := pack.CombinedOutput()
	if err != nil {
		t.Fatalf("npm pack in a clean copy: %v\n%s", err, out)
	}
	tarballs, _ := filepath.Glob(filepath.Join(dest, "*.tgz"))
	if len(tarballs) != 1 {
		t.Fatalf("npm pack made %v:\n%s", tarballs, out)
	}
	listing, err := exec.Command("tar", "tzf", tarballs[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("tar: %v\n%s", err, listing)
	}
	for _, want := range []string{"package/README.md", "package/dist/esm/index.js", "package/dist/esm/index.d.ts", "package/dist/esm/types.d.ts",
		"package/dist/cjs/index.js", "package/dist/cjs/index.d.ts", "package/dist/cjs/package.json"} {
		if !strings.Contains(string(listing), want+"\n") {
			t.Errorf("the package lacks %s:\n%s", want, listing)
		}
	}
	if strings.Contains(string(listing), "package/src/") || strings.Contains(string(listing), "package/test/") {
		t.Errorf("the package holds sources or tests:\n%s", listing)
	}

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
	wantOut := `{"id":` + strconv.FormatInt(d.Samples.CompanyID, 10) + `,"missing":"404"}`

	for _, from := range []struct{ name, spec string }{{"directory", clean}, {"tarball", tarballs[0]}} {
		for _, format := range []struct{ typ, build, emitted string }{
			{"module", "esm", `from "@crmservice/crm-sdk"`},
			{"commonjs", "cjs", `require("@crmservice/crm-sdk")`},
		} {
			t.Run(from.name+"/"+format.typ, func(t *testing.T) {
				project := t.TempDir()
				write := func(name, text string) {
					if err := os.WriteFile(filepath.Join(project, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				write("package.json", `{"name":"try-crm-sdk","version":"0.0.0","private":true,"type":"`+format.typ+`"}`)
				write("tsconfig.json", `{"compilerOptions":{"target":"ES2022","module":"NodeNext","moduleResolution":"NodeNext",`+
					`"lib":["ES2022","DOM"],"strict":true,"types":[],"skipLibCheck":false},"files":["main.ts"]}`)
				write("main.ts", consumerMain)
				in := func(name string, args ...string) string {
					t.Helper()
					cmd := exec.Command(name, args...)
					cmd.Dir = project
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
					}
					return strings.TrimSpace(string(out))
				}
				in("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", from.spec)
				in(tsc, "-p", ".")
				if js, err := os.ReadFile(filepath.Join(project, "main.js")); err != nil || !strings.Contains(string(js), format.emitted) {
					t.Errorf("tsc wrote no %s project (%v):\n%s", format.typ, err, js)
				}
				resolve := `console.log(require.resolve("@crmservice/crm-sdk"))`
				if format.typ == "module" {
					resolve = `console.log(import.meta.resolve("@crmservice/crm-sdk"))`
				}
				if got := in("node", "--input-type="+format.typ, "-e", resolve); !strings.HasSuffix(filepath.ToSlash(got), "dist/"+format.build+"/index.js") {
					t.Errorf("the package resolves to %s, not its %s build", got, format.build)
				}
				if got := in("node", "main.js", srv.URL, d.Token, strconv.FormatInt(d.Samples.CompanyID, 10)); got != wantOut {
					t.Errorf("the program printed %s, want %s", got, wantOut)
				}
				if from.name == "tarball" && format.typ == "module" {
					got := in("node", "--input-type=module", "-e", `import { version } from "@crmservice/crm-sdk"; console.log(version);`)
					doc, err := gen.GetSpec()
					if err != nil {
						t.Fatal(err)
					}
					if got != doc.Info.Version {
						t.Errorf("the installed package says version %q, want %q", got, doc.Info.Version)
					}
				}
			})
		}
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
