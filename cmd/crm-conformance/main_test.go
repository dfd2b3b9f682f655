package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "fake-1") // as every reply of the service
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"status":"success","error":"","code":null,"rows":0,"pages":0,"page":0,"value":"{\"status\":\"ok\"}"}`))
			return
		}
		if fakeWhoAmI(w, r) {
			return
		}
		w.Write([]byte(`{"status":"success","error":"","code":null,"rows":0,"pages":0,"page":0,"value":"{\"status\":\"down\"}"}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cases := `
- name: healthz
  request: {method: GET, path: /healthz, auth: none}
  expect: {value_json: {status: ok}}
- name: readyz
  request: {method: GET, path: /readyz, auth: none}
  expect: {value_json: {status: ok}}
`
	if err := os.WriteFile(filepath.Join(dir, "system.yaml"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	contract := filepath.Join("..", "..", "openapi.yaml")

	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"one failure", []string{"-base-url", srv.URL, "-token", "t", "-cases", dir, "-contract", contract},
			1, []string{"ok   system/healthz (", "FAIL system/readyz (", "reply: HTTP 200", "1 passed, 1 failed, 0 skipped, 2 cases"}},
		{"filtered", []string{"-base-url", srv.URL, "-token", "t", "-cases", dir, "-run", "healthz", "-v"},
			0, []string{"ok   system/healthz (", "request: GET /healthz", "1 passed, 0 failed, 0 skipped, 1 cases"}},
		{"missing base URL", []string{"-token", "t"}, 2, []string{"-base-url and -token"}},
		{"bad variable", []string{"-base-url", srv.URL, "-token", "t", "-var", "novalue"}, 2, []string{"want name=value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tt.code {
				t.Errorf("exit code %d, want %d\n%s", code, tt.code, all)
			}
			for _, want := range tt.contains {
				if !strings.Contains(all, want) {
					t.Errorf("output does not contain %q:\n%s", want, all)
				}
			}
		})
	}
}

func TestRunTokenFromEnvironment(t *testing.T) {
	t.Setenv("CRM_TOKEN", "from-env")
	var seen string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "fake-1")
		if fakeWhoAmI(w, r) {
			return
		}
		w.Write([]byte(`{"status":"success","error":"","code":null,"rows":2,"pages":1,"page":1,"value":"[{\"ID\":1,\"NAME\":\"a\"},{\"ID\":2,\"NAME\":\"b\"}]"}`))
	}))
	defer srv.Close()
	var out bytes.Buffer
	if code := run([]string{"-base-url", srv.URL, "-run", "^auth/valid token$"}, &out, &out); code != 0 {
		t.Errorf("exit code %d\n%s", code, out.String())
	}
	if seen != "Bearer from-env" {
		t.Errorf("Authorization %q, want the token of $CRM_TOKEN", seen)
	}
}

// fakeWhoAmI answers the request with which the command learns the token
// owner before the first case, and reports whether it was that request.
func fakeWhoAmI(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/dashboard/my/day" && r.URL.Path != "/user/me" {
		return false
	}
	w.Write([]byte(`{"status":"success","error":"","code":null,"rows":0,"pages":0,"page":0,"value":"{\"id\":1,\"user\":{\"id\":1}}"}`))
	return true
}
