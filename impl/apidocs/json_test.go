package apidocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	crm "github.com/crmservice/crm"
	"github.com/crmservice/crm/gen"
)

// yamlKeys lists every mapping of a YAML document by its path, with its
// keys in the order written.
func yamlKeys(n *yaml.Node, path string, out map[string][]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		yamlKeys(n.Content[0], path, out)
	case yaml.MappingNode:
		keys := []string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
			yamlKeys(n.Content[i+1], path+"/"+n.Content[i].Value, out)
		}
		out[path] = keys
	case yaml.SequenceNode:
		for i, v := range n.Content {
			yamlKeys(v, path+"/"+strings.Repeat("#", i+1), out)
		}
	}
}

// jsonKeys does the same for a JSON text, reading its tokens in order.
func jsonKeys(t *testing.T, dec *json.Decoder, path string, out map[string][]string) {
	t.Helper()
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	switch tok {
	case json.Delim('{'):
		keys := []string{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			jsonKeys(t, dec, path+"/"+k.(string), out)
		}
		_, _ = dec.Token()
		out[path] = keys
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			jsonKeys(t, dec, path+"/"+strings.Repeat("#", i+1), out)
		}
		_, _ = dec.Token()
	}
}

// TestJSONKeepsTheDocumentsOrder: /openapi.json has every object's keys in
// the order openapi.yaml writes them, and says what the YAML says (the same
// values as the document kin-openapi loads).
func TestJSONKeepsTheDocumentsOrder(t *testing.T) {
	text, err := JSON(crm.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(crm.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	want, got := map[string][]string{}, map[string][]string{}
	yamlKeys(&doc, "", want)
	dec := json.NewDecoder(bytes.NewReader(text))
	jsonKeys(t, dec, "", got)
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("text after the document: %v", err)
	}
	if len(want) < 1000 || len(got) != len(want) {
		t.Fatalf("%d objects in the JSON, %d mappings in the YAML", len(got), len(want))
	}
	for path, keys := range want {
		if !slices.Equal(got[path], keys) {
			t.Errorf("%s: keys %q, want %q", path, got[path], keys)
		}
	}
	// Every operation's first reply is its 200.
	for path, keys := range got {
		if strings.HasPrefix(path, "/paths/") && strings.HasSuffix(path, "/responses") && keys[0] != "200" {
			t.Errorf("%s: first reply %s", path, keys[0])
		}
	}

	kin, err := gen.GetSpecJSON()
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(text, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(kin, &b); err != nil {
		t.Fatal(err)
	}
	// kin-openapi leaves out "required": false and "example": null, which the
	// document writes.
	if !reflect.DeepEqual(withoutFalseRequired(a), withoutFalseRequired(b)) {
		t.Error("the JSON says something else than the document kin-openapi loads")
	}
}

func TestJSONForms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"b: 1\na: {d: 1200.50, c: [x, 2, true, null, 0x1F, 1_000]}\n", `{"b":1,"a":{"d":1200.50,"c":["x",2,true,null,31,1000]}}`},
		{"z: '2026-11-02'\ny: 2026-11-02\nx: \"<&>\"\n", `{"z":"2026-11-02","y":"2026-11-02","x":"\u003c\u0026\u003e"}`},
		{"a: &x {q: 1}\nb: *x\n", `{"a":{"q":1},"b":{"q":1}}`},
	} {
		got, err := JSON([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"a: 1\na: 2\n", "a: .inf\n", "<<: {a: 1}\n", "? [a]\n: 1\n"} {
		if got, err := JSON([]byte(in)); err == nil {
			t.Errorf("%q: %s, no error", in, got)
		}
	}
}

// withoutFalseRequired drops what kin-openapi does not write back.
func withoutFalseRequired(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["required"].(bool); ok && !r {
			delete(v, "required")
		}
		if e, ok := v["example"]; ok && e == nil {
			delete(v, "example")
		}
		for _, e := range v {
			withoutFalseRequired(e)
		}
	case []any:
		for _, e := range v {
			withoutFalseRequired(e)
		}
	}
	return v
}
