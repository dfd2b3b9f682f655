package conformance

import (
	"bytes"
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// TestEmbeddedCases checks the case files themselves: they load, every request
// that is not meant to be refused as invalid input is valid per openapi.yaml,
// the expected failure values follow x-error-value, and every operation of the
// contract has at least one case.
func TestEmbeddedCases(t *testing.T) {
	suites, err := LoadCases(EmbeddedCases())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range suites {
		names = append(names, s.Name)
	}
	for _, want := range []string{"auth", "companies", "contacts", "dashboards", "deals", "directories", "documents", "errors", "finance", "list", "mail", "system", "tasks"} {
		if !slices.Contains(names, want) {
			t.Errorf("no suite %s among %v", want, names)
		}
	}

	contract := testContract(t)
	covered := map[string]bool{}
	for _, s := range suites {
		for _, c := range s.Cases {
			name := s.Name + "/" + c.Name
			vars := map[string]string{}
			for _, v := range c.Uses() {
				vars[v] = "1"
			}
			rc, err := resolve(&c, "http://localhost:8080", "crm_test", vars)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			req := httptest.NewRequest(c.Request.Method, rc.target, bytes.NewReader(rc.body))
			req.Header = rc.header
			route, params, err := contract.router.FindRoute(req)
			if c.Unchecked {
				if err == nil {
					t.Errorf("%s is marked unchecked, but %s %s is an operation of the contract", name, c.Request.Method, route.Path)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %s %s is no operation of the contract", name, c.Request.Method, rc.target)
				continue
			}
			covered[c.Request.Method+" "+route.Path] = true

			code := ""
			if c.Expect.Code != nil {
				code = *c.Expect.Code
			}
			if c.Expect.Status != StatusSuccess && c.Expect.Value != nil && code != "409" {
				want, _ := route.Operation.Extensions["x-error-value"].(string)
				if *c.Expect.Value != want {
					t.Errorf("%s: expects value %q on failure, but x-error-value of %s is %q", name, *c.Expect.Value, route.Path, want)
				}
			}
			if code == "400" {
				continue
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("%s: the request is not valid per openapi.yaml: %v", name, firstLineOf(err.Error()))
			}
		}
	}
	for path, item := range contract.Doc.Paths.Map() {
		for method := range item.Operations() {
			if !covered[method+" "+path] {
				t.Errorf("no case calls %s %s", method, path)
			}
		}
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
