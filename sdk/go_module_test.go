package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goSDKMinimum is the oldest Go the SDK's module states (sdk/go/go.mod), which
// the README and docs/clients.md state too.
const goSDKMinimum = "1.25"

// maxSDKWeight bounds what the SDK adds to a program that calls the API with
// net/http and encoding/json alone, built by the same toolchain: the SDK must
// not bring the server's dependencies along (it added 1.8 MiB when it did).
// The absolute sizes depend on the toolchain: with Go 1.26 net/http alone
// makes 8.5 MiB (5.9 MiB with -ldflags=-s -w).
const maxSDKWeight = 1 << 20

// TestGoSDKIsAClient builds, as a project of its own, a program that calls one
// operation through the Go SDK: its go.mod, tidied, keeps `go 1.25.0` (the SDK
// imposes nothing newer), the program imports no kin-openapi and no package of
// the server's module, it is less than maxSDKWeight larger than the same call
// made with net/http and encoding/json alone, and it runs against a server. The module cache must hold the SDK's requirements (make test's builds
// put them there); nothing is fetched.
func TestGoSDKIsAClient(t *testing.T) {
	sdkMod, err := os.ReadFile(filepath.Join("go", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(sdkMod); m == nil || string(m[1]) != goSDKMinimum+".0" {
		t.Fatalf("sdk/go/go.mod states go %q, the documents %s", m, goSDKMinimum)
	}
	for _, doc := range []string{"../README.md", "../docs/clients.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(text, []byte("Go "+goSDKMinimum+" or newer")) {
			t.Errorf("%s does not say the SDK needs Go %s or newer", doc, goSDKMinimum)
		}
	}
	sdkDir, err := filepath.Abs("go")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(sdkDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/tiny\n\ngo "+goSDKMinimum+".0\n\n"+
		"require github.com/crmservice/crm/sdk/go v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/crmservice/crm/sdk/go => "+sdkDir+"\n")
	write("go.sum", string(sum))
	write("main.go", `package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/crmservice/crm/sdk/go/crm"
)

func main() {
	c, err := crm.New(os.Args[1], os.Args[2])
	if err != nil {
		panic(err)
	}
	id, err := strconv.ParseInt(os.Args[3], 10, 64)
	if err != nil {
		panic(err)
	}
	card, err := c.CompanyGet(context.Background(), id)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(card.Company.Name)
}
`)
	// The same call without the SDK, for the size of what the SDK adds.
	if err := os.Mkdir(filepath.Join(dir, "nosdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("nosdk/main.go", `package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func main() {
	req, err := http.NewRequest(http.MethodGet, os.Args[1]+"/company/get?id="+os.Args[3], nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+os.Args[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var env struct{ Status, Value string }
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		panic(err)
	}
	var card struct{ Company struct{ Name string } }
	if err := json.Unmarshal([]byte(env.Value), &card); err != nil {
		panic(err)
	}
	fmt.Println(card.Company.Name)
}
`)
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// The module proxy as configured: go mod tidy reads the go.mod files
		// of the SDK's dependencies' own test dependencies, which a fresh
		// machine's module cache does not hold (GOPROXY=off passed only
		// where an earlier build had fetched them).
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	if mod, _ := os.ReadFile(filepath.Join(dir, "go.mod")); !bytes.Contains(mod, []byte("\ngo "+goSDKMinimum+".0\n")) {
		t.Errorf("go mod tidy changed the program's go line: the SDK imposes more than Go %s:\n%s", goSDKMinimum, mod)
	}
	for _, dep := range strings.Fields(goCmd("list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")) {
		switch {
		case strings.Contains(dep, "kin-openapi"), strings.HasPrefix(dep, "github.com/crmservice/crm/") && !strings.HasPrefix(dep, "github.com/crmservice/crm/sdk/go/"):
			t.Errorf("the program imports %s", dep)
		}
	}
	size := func(name string, flags ...string) int64 {
		t.Helper()
		bin := filepath.Join(dir, name)
		pkg := "."
		if strings.HasPrefix(name, "bare") {
			pkg = "./nosdk"
		}
		goCmd(append(append([]string{"build", "-o", bin}, flags...), pkg)...)
		info, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	mb := func(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + " MiB" }
	tiny, bare := size("tiny"), size("bare")
	tinyStripped, bareStripped := size("tiny-stripped", "-ldflags=-s -w"), size("bare-stripped", "-ldflags=-s -w")
	t.Logf("one operation through the Go SDK: %s (%s with -ldflags=-s -w); the same with net/http alone: %s (%s)",
		mb(tiny), mb(tinyStripped), mb(bare), mb(bareStripped))
	if tiny-bare >= maxSDKWeight || tinyStripped-bareStripped >= maxSDKWeight {
		t.Errorf("the SDK adds %d bytes (%d stripped) to the program, over %d", tiny-bare, tinyStripped-bareStripped, maxSDKWeight)
	}

	// With the oldest Go it claims, where that toolchain is in the module cache (fetched
	// once by GOTOOLCHAIN=go1.25.0 go version); nothing is downloaded here.
	old := exec.Command("go", "build", "-o", filepath.Join(dir, "tiny-"+goSDKMinimum), ".")
	old.Dir = dir
	old.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=go"+goSDKMinimum+".0")
	if out, err := old.CombinedOutput(); err == nil {
		t.Logf("built with Go %s.0 as well", goSDKMinimum)
	} else if strings.Contains(string(out), "GOPROXY=off") || strings.Contains(string(out), "toolchain") {
		t.Logf("Go %s.0 is not in the module cache, so the program was not built with it: %s", goSDKMinimum, strings.TrimSpace(string(out)))
	} else {
		t.Errorf("Go %s.0 does not build the program: %v\n%s", goSDKMinimum, err, out)
	}

	srv, d := newServer(t)
	id := strconv.FormatInt(d.Samples.CompanyID, 10)
	want, err := exec.Command(filepath.Join(dir, "bare"), srv.URL, d.Token, id).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(want)) == 0 {
		t.Fatalf("the program without the SDK: %v: %s", err, want)
	}
	if got, err := exec.Command(filepath.Join(dir, "tiny"), srv.URL, d.Token, id).CombinedOutput(); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the program: %v: %q, want %q", err, got, want)
	}
}
