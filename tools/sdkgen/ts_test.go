package main

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

const testDoc = `
openapi: 3.0.3
info: {title: t, version: 2.3.4}
paths:
  /thing/get:
    get:
      operationId: thingGet
      x-value-schema: '#/components/schemas/Thing'
      parameters:
        - {name: id, in: query, required: true, schema: {type: integer}}
        - {name: If-None-Match, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
  /thing/insert:
    post:
      operationId: thingInsert
      x-value-schema: '#/components/schemas/NewId'
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/ThingInput'}}}
      responses: {'200': {description: ok}}
components:
  schemas:
    NewId: {type: integer}
    Thing:
      type: object
      required: [id, sum]
      properties:
        id: {type: integer}
        sum: {type: number}
        note: {type: string, nullable: true}
        kind: {type: string, enum: [a, b]}
        lines: {type: array, items: {$ref: '#/components/schemas/Line'}}
    Line:
      type: object
      description: A line; ` + "`ADD_{name}`" + ` members carry additional fields.
      additionalProperties: true
      properties:
        qnt: {type: number, nullable: true}
    ThingInput:
      type: object
      additionalProperties: false
      required: [sum]
      properties:
        sum: {type: number}
`

func loadTestDoc(t *testing.T) (*openapi3.T, []operation) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := operations(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, ops
}

// TestTypeScriptTypes checks the types and shapes written for a small contract:
// decimals are Decimal in replies and DecimalInput in request-only schemas, and
// the shapes say where they are.
func TestTypeScriptTypes(t *testing.T) {
	doc, ops := loadTestDoc(t)
	g := &tsGen{doc: doc, decimal: map[string]int{}}
	g.input = g.inputOnly(ops)
	types, err := g.typesFile(ops)
	if err == nil || !strings.Contains(err.Error(), "x-list-modules") {
		t.Fatalf("a contract without x-list-modules: %v", err)
	}
	_ = types
	for name, want := range map[string]string{
		"Thing":      "{\n  id: number;\n  kind?: \"a\" | \"b\";\n  lines?: Line[];\n  note?: string | null;\n  sum: Decimal;\n}",
		"ThingInput": "{\n  sum: DecimalInput;\n}",
		"Line":       "{\n  qnt?: Decimal | null;\n  [member: `ADD_${string}`]: unknown;\n}",
	} {
		got := g.tsType(&openapi3.SchemaRef{Value: doc.Components.Schemas[name].Value}, g.input[name], "")
		if got != want {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"Thing":      `{ o: { "lines": { a: "#Line" }, "sum": "d" } }`,
		"Line":       `{ o: { "qnt": "d" }, x: "f" }`,
		"ThingInput": `{ o: { "sum": "d" } }`,
		"NewId":      `0`,
	} {
		if got := g.shape(&openapi3.SchemaRef{Value: doc.Components.Schemas[name].Value}); got != want {
			t.Errorf("shape of %s: %s, want %s", name, got, want)
		}
	}
	ops2, err := g.operationsFile(ops)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`export const version = "2.3.4";`,
		`thingGet: { method: "GET", path: "/thing/get", pathParams: [], queryParams: ["id"], body: false, bodyShape: 0, value: "Thing", valueShape: "#Thing" },`,
		`thingInsert: { method: "POST", path: "/thing/insert", pathParams: [], queryParams: [], body: true, bodyShape: "#ThingInput", value: "NewId", valueShape: 0 },`,
	} {
		if !strings.Contains(string(ops2), want) {
			t.Errorf("operations.ts lacks %s:\n%s", want, ops2)
		}
	}
}

// TestOperationsNeedValueSchema: an operation without x-value-schema stops the generator.
func TestOperationsNeedValueSchema(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(strings.Replace(testDoc, "      x-value-schema: '#/components/schemas/NewId'\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operations(doc); err == nil || !strings.Contains(err.Error(), "/thing/insert") {
		t.Fatalf("error %v, want one naming /thing/insert", err)
	}
}

// TestTypeScriptOpenObject: an object with declared members whose description does not say
// its other members are ADD_{name} is refused, since any misspelt member would type-check.
func TestTypeScriptOpenObject(t *testing.T) {
	doc, ops := loadTestDoc(t)
	doc.Components.Schemas["Line"].Value.Description = "A line."
	g := &tsGen{doc: doc, decimal: map[string]int{}}
	g.input = g.inputOnly(ops)
	if _, err := g.typesFile(ops); err == nil || !strings.Contains(err.Error(), "schema Line: an object with properties and additionalProperties: true") {
		t.Fatalf("an open object of unnamed members: %v", err)
	}
}
