package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestContractDocumentsEveryOperation holds openapi.yaml to the rules it sets
// itself: every operation has a unique operationId, a tag, a summary and a
// description, names the schema of its decoded value, gives a request example
// where it takes input, documents its 401 and 429 replies when it needs a token,
// and has examples of a success and of a failure that match the envelope. Every
// success example's value also matches the operation's x-value-schema.
func TestContractDocumentsEveryOperation(t *testing.T) {
	c := testContract(t)
	ids := map[string]string{}
	ops := 0
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			name := method + " " + path
			t.Run(name, func(t *testing.T) {
				if prev, dup := ids[op.OperationID]; dup || op.OperationID == "" {
					t.Errorf("operationId %q missing or also used by %s", op.OperationID, prev)
				}
				ids[op.OperationID] = name
				// One tag of its resource, and the tag extensions exactly on the
				// operations marked x-extension (docs/extensions.md).
				extension, _ := op.Extensions["x-extension"].(bool)
				tags := slices.DeleteFunc(slices.Clone(op.Tags), func(tag string) bool { return tag == "extensions" })
				if len(tags) != 1 || op.Summary == "" || strings.TrimSpace(op.Description) == "" {
					t.Errorf("want one tag besides extensions, a summary and a description")
				}
				if (len(tags) != len(op.Tags)) != extension {
					t.Errorf("the tag extensions and x-extension: true go together")
				}
				schema, schemaName, err := c.ValueSchema(op)
				if err != nil {
					t.Fatal(err)
				}
				checkGeneratorsSeeValueSchema(t, op, schemaName)
				if hasInput(op) && !hasRequestExample(op) {
					t.Errorf("takes input but has no request example")
				}
				secured := op.Security == nil || len(*op.Security) > 0
				if secured && (op.Responses.Value("401") == nil || op.Responses.Value("429") == nil) {
					t.Errorf("needs a token but does not document 401 and 429")
				}
				var success, failure int
				for _, code := range []string{"200", "503"} {
					resp := op.Responses.Value(code)
					if resp == nil {
						continue
					}
					for exName, ex := range resp.Value.Content.Get("application/json").Examples {
						var env struct {
							Status string `json:"status"`
							Value  string `json:"value"`
						}
						raw, _ := json.Marshal(ex.Value.Value)
						if err := json.Unmarshal(raw, &env); err != nil {
							t.Errorf("example %s is not an envelope: %v", exName, err)
							continue
						}
						if env.Status != "success" {
							failure++
							continue
						}
						success++
						value, err := DecodeValue(env.Value)
						if err != nil {
							t.Errorf("example %s: value: %v", exName, err)
							continue
						}
						if err := schema.VisitJSON(value, openapi3.MultiErrors()); err != nil {
							t.Errorf("example %s: value does not match x-value-schema: %v", exName, err)
						}
					}
				}
				if success == 0 || (secured && failure == 0) {
					t.Errorf("%d success and %d failure examples; want both", success, failure)
				}
			})
		}
	}
	if ops < 26 {
		t.Errorf("%d operations; the interface has 26", ops)
	}
}

func hasInput(op *openapi3.Operation) bool {
	return op.RequestBody != nil || len(op.Parameters) > 0
}

func hasRequestExample(op *openapi3.Operation) bool {
	if op.RequestBody != nil {
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && (mt.Example != nil || len(mt.Examples) > 0) {
			return true
		}
	}
	for _, p := range op.Parameters {
		if p.Value.Example != nil || len(p.Value.Examples) > 0 {
			return true
		}
	}
	return false
}

// TestContractNamesItsObjectSchemas checks that every object schema is a named
// component, so that generated SDKs get a named type for each.
func TestContractNamesItsObjectSchemas(t *testing.T) {
	c := testContract(t)
	var inline []string
	var walk func(ref *openapi3.SchemaRef, where string, named bool)
	walk = func(ref *openapi3.SchemaRef, where string, named bool) {
		if ref == nil || ref.Value == nil || (ref.Ref != "" && !named) {
			return
		}
		s := ref.Value
		if !named && s.Type.Is(openapi3.TypeObject) {
			inline = append(inline, where)
		}
		for name, p := range s.Properties {
			walk(p, where+"."+name, false)
		}
		walk(s.Items, where+"[]", false)
		for _, sub := range append(append(s.AllOf, s.OneOf...), s.AnyOf...) {
			walk(sub, where+"(of)", false)
		}
	}
	for name, s := range c.Doc.Components.Schemas {
		walk(s, name, true)
	}
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			for _, p := range op.Parameters {
				walk(p.Value.Schema, where+" parameter "+p.Value.Name, false)
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema, where+" body "+ct, false)
				}
			}
			for code, resp := range op.Responses.Map() {
				for ct, mt := range resp.Value.Content {
					walk(mt.Schema, where+" reply "+code+" "+ct, false)
				}
			}
		}
	}
	if len(inline) > 0 {
		t.Errorf("inline object schemas (make them named components): %v", inline)
	}
}

// interfaceOperations are the operations of the interface specification; every
// other operation of the contract is an extension.
var interfaceOperations = []string{
	"POST /common/list/paging/{module}", "GET /finance/list", "GET /document/list", "GET /task/list",
	"GET /contact/list", "POST /contact/insert", "POST /company/insert", "POST /company/update", "GET /company/get",
	"POST /company/requisites/insert", "POST /company/phone/insert", "POST /company/email/insert", "POST /task/insert",
	"POST /deal/insert", "POST /deal/update", "GET /deal/goods/list", "POST /deal/goods/insert", "POST /deal/goods/update",
	"GET /document/goods/list", "POST /document/goods/insert", "GET /directory/{code}", "POST /mail/send",
	"GET /dashboard/my/day", "GET /dashboard/my/tasks", "GET /dashboard/kpi/my", "GET /dashboard/kpi/team",
}

// TestExtensionsListed checks that every operation beyond the interface is
// marked (x-extension: true and the tag extensions) and named in
// docs/extensions.md, and that no operation of the interface is.
func TestExtensionsListed(t *testing.T) {
	c := testContract(t)
	doc, err := os.ReadFile("../docs/extensions.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			marked, _ := op.Extensions["x-extension"].(bool)
			tagged := slices.Contains(op.Tags, "extensions")
			listed := strings.Contains(string(doc), "`"+name+"`")
			if slices.Contains(interfaceOperations, name) {
				seen++
				if marked || tagged || listed {
					t.Errorf("%s is an operation of the interface but is marked or listed as an extension", name)
				}
				continue
			}
			if !marked || !tagged || !listed {
				t.Errorf("%s is an extension: x-extension %t, tag extensions %t, in docs/extensions.md %t; want all three", name, marked, tagged, listed)
			}
		}
	}
	if seen != len(interfaceOperations) {
		t.Errorf("%d of the %d operations of the interface are in the contract", seen, len(interfaceOperations))
	}
}

// checkGeneratorsSeeValueSchema: the operation's default reply is the envelope
// and declares the header X-Value-Schema whose content is JSON of the
// x-value-schema's schema, the standard reference through which ogen, which
// keeps only what the operations reference, generates the payload type with its
// JSON decoder.
func checkGeneratorsSeeValueSchema(t *testing.T, op *openapi3.Operation, schemaName string) {
	t.Helper()
	def := op.Responses.Default()
	if def == nil || def.Value == nil {
		t.Errorf("no default reply declaring X-Value-Schema (components/responses/Other%s)", schemaName)
		return
	}
	if mt := def.Value.Content.Get("application/json"); mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Envelope" || len(def.Value.Content) != 1 {
		t.Errorf("the default reply is not just the envelope")
	}
	h := def.Value.Headers["X-Value-Schema"]
	if h == nil || h.Value == nil || h.Value.Required || h.Value.Schema != nil {
		t.Errorf("the default reply does not declare an optional header X-Value-Schema by its content")
		return
	}
	mt := h.Value.Content.Get("application/json")
	if want := "#/components/schemas/" + schemaName; mt == nil || mt.Schema == nil || mt.Schema.Ref != want || len(h.Value.Content) != 1 {
		t.Errorf("X-Value-Schema of the default reply is not application/json of %s", want)
	}
}

// TestContractSuitsClientGenerators: every number of the component schemas is
// format double (generic generators make a bare number a 32-bit float), and no
// schema of a request body has a default (openapi-typescript makes such a
// property required); make lint runs the generated clients themselves.
func TestContractSuitsClientGenerators(t *testing.T) {
	c := testContract(t)
	requests := map[*openapi3.Schema]bool{}
	for _, item := range c.Doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					if mt.Schema != nil && mt.Schema.Value != nil {
						requests[mt.Schema.Value] = true
					}
				}
			}
		}
	}
	seen := map[*openapi3.Schema]bool{}
	var walk func(path string, s *openapi3.SchemaRef, request bool)
	walk = func(path string, s *openapi3.SchemaRef, request bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if v.Type.Is("number") && v.Format != "double" {
			t.Errorf("%s: a number without format double", path)
		}
		for name, p := range v.Properties {
			if request && p.Value != nil && p.Value.Default != nil {
				t.Errorf("%s.%s: a property of a request body with a default (say it in the description)", path, name)
			}
			walk(path+"."+name, p, request)
		}
		walk(path+"[]", v.Items, request)
		if v.AdditionalProperties.Schema != nil {
			walk(path+"{}", v.AdditionalProperties.Schema, request)
		}
		for _, list := range []openapi3.SchemaRefs{v.AllOf, v.AnyOf, v.OneOf} {
			for i, sub := range list {
				walk(fmt.Sprintf("%s/%d", path, i), sub, request)
			}
		}
	}
	for name, s := range c.Doc.Components.Schemas {
		if s.Value != nil && requests[s.Value] {
			walk(name, s, true)
		}
	}
	for name, s := range c.Doc.Components.Schemas {
		walk(name, s, false)
	}
}
