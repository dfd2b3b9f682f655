package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The TypeScript SDK keeps amounts exact: a schema of `type: number` (a
// PostgreSQL numeric: amounts, prices, quantities, rates) is a Decimal, the
// decimal text the server sent, in every reply; request bodies take a Decimal
// or a JS number. The runtime (src/client.ts) reads and writes them by the
// shapes generated here: where in a value the decimals are.

type tsGen struct {
	doc     *openapi3.T
	input   map[string]bool // schemas reachable from a request body only
	decimal map[string]int  // schema name → 0 unknown, 1 visiting, 2 no decimals, 3 decimals
	err     error           // the first schema that cannot be typed
}

// additionalMembers is how a schema with declared properties says that its
// other members are additional fields (its description names them so); they
// are typed by that prefix, so that a misspelt declared member is a type error.
const additionalMembers = "`ADD_{name}`"

func tsSDK(dir string, doc *openapi3.T, ops []operation) error {
	g := &tsGen{doc: doc, decimal: map[string]int{}}
	g.input = g.inputOnly(ops)
	types, err := g.typesFile(ops)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "types.ts"), types, 0o644); err != nil {
		return err
	}
	opsFile, err := g.operationsFile(ops)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "operations.ts"), opsFile, 0o644); err != nil {
		return err
	}
	return setVersion(dir, doc.Info.Version)
}

// setVersion writes info.version into package.json and the root entries of
// package-lock.json (the package's own version, not its dependencies').
func setVersion(dir, version string) error {
	for _, name := range []string{"package.json", "package-lock.json"} {
		file := filepath.Join(dir, name)
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		n := 1
		if name == "package-lock.json" {
			n = 2 // the lock's top level and its packages[""]
		}
		re := regexp.MustCompile(`(?m)^(  |      )"version": "[^"]*"`)
		done := 0
		orig := data
		data = re.ReplaceAllFunc(data, func(m []byte) []byte {
			if done >= n {
				return m
			}
			done++
			indent := m[:bytes.IndexByte(m, '"')]
			return []byte(string(indent) + `"version": "` + version + `"`)
		})
		if bytes.Equal(orig, data) {
			continue // untouched, so that npm ci is not made to run again
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func refName(ref string) string { return strings.TrimPrefix(ref, schemaPrefix) }

// inputOnly lists the schemas that only request bodies and parameters reach.
func (g *tsGen) inputOnly(ops []operation) map[string]bool {
	in, out := map[string]bool{}, map[string]bool{}
	var walk func(r *openapi3.SchemaRef, seen map[string]bool)
	walk = func(r *openapi3.SchemaRef, seen map[string]bool) {
		if r == nil {
			return
		}
		if r.Ref != "" {
			n := refName(r.Ref)
			if seen[n] {
				return
			}
			seen[n] = true
		}
		s := r.Value
		if s == nil {
			return
		}
		for _, p := range s.Properties {
			walk(p, seen)
		}
		walk(s.Items, seen)
		walk(s.AdditionalProperties.Schema, seen)
		for _, x := range append(append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...), s.AllOf...) {
			walk(x, seen)
		}
	}
	for _, op := range ops {
		if op.Op.RequestBody != nil && op.Op.RequestBody.Value != nil {
			for _, mt := range op.Op.RequestBody.Value.Content {
				walk(mt.Schema, in)
			}
		}
		for _, p := range op.Op.Parameters {
			walk(p.Value.Schema, in)
		}
		walk(&openapi3.SchemaRef{Ref: schemaPrefix + op.ValueSchema, Value: g.doc.Components.Schemas[op.ValueSchema].Value}, out)
	}
	// Every other schema counts as output, so that its decimals are strings.
	for name := range g.doc.Components.Schemas {
		if !in[name] {
			out[name] = true
		}
	}
	only := map[string]bool{}
	for n := range in {
		if !out[n] {
			only[n] = true
		}
	}
	return only
}

// hasDecimal reports whether a schema holds a decimal anywhere (or free-form values).
func (g *tsGen) hasDecimal(r *openapi3.SchemaRef) bool {
	if r == nil {
		return false
	}
	if r.Ref != "" {
		n := refName(r.Ref)
		switch g.decimal[n] {
		case 1, 2:
			return false
		case 3:
			return true
		}
		g.decimal[n] = 1
		has := g.hasDecimalValue(g.doc.Components.Schemas[n].Value)
		g.decimal[n] = 2
		if has {
			g.decimal[n] = 3
		}
		return has
	}
	return g.hasDecimalValue(r.Value)
}

func (g *tsGen) hasDecimalValue(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	if s.Type == nil || s.Type.Is("number") {
		return true // a decimal, or a free-form value
	}
	for _, p := range s.Properties {
		if g.hasDecimal(p) {
			return true
		}
	}
	if g.hasDecimal(s.Items) {
		return true
	}
	if s.AdditionalProperties.Schema != nil && g.hasDecimal(s.AdditionalProperties.Schema) {
		return true
	}
	if s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has {
		return true
	}
	for _, x := range append(append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...), s.AllOf...) {
		if g.hasDecimal(x) {
			return true
		}
	}
	return false
}

// shape is the TypeScript literal of where the decimals of a schema are:
// 0 none, "d" a decimal, "f" free-form (numbers kept as text when a JS number
// would change them), "#Name" the shape of a named schema, {a: item},
// {o: {member: shape}, x: shape of other members}.
func (g *tsGen) shape(r *openapi3.SchemaRef) string {
	if r == nil || !g.hasDecimal(r) {
		return "0"
	}
	if r.Ref != "" {
		return strconv.Quote("#" + refName(r.Ref))
	}
	s := r.Value
	switch {
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0 || s.Type == nil:
		return `"f"`
	case s.Type.Is("number"):
		return `"d"`
	case s.Type.Is("array"):
		return "{ a: " + g.shape(s.Items) + " }"
	case s.Type.Is("object"):
		var parts []string
		for _, k := range sortedKeys(s.Properties) {
			if sh := g.shape(s.Properties[k]); sh != "0" {
				parts = append(parts, strconv.Quote(k)+": "+sh)
			}
		}
		out := "{ o: { " + strings.Join(parts, ", ") + " }"
		if s.AdditionalProperties.Schema != nil {
			out += ", x: " + g.shape(s.AdditionalProperties.Schema)
		} else if s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has {
			out += `, x: "f"`
		}
		return out + " }"
	}
	return "0"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

func tsKey(k string) string {
	if identifier.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

// tsType writes the type of a schema; input: as a request takes it.
func (g *tsGen) tsType(r *openapi3.SchemaRef, input bool, indent string) string {
	if r == nil {
		return "unknown"
	}
	if r.Ref != "" {
		return refName(r.Ref)
	}
	s := r.Value
	t := g.tsTypeValue(s, input, indent)
	if s.Nullable && t != "unknown" {
		t += " | null"
	}
	return t
}

func (g *tsGen) tsTypeValue(s *openapi3.Schema, input bool, indent string) string {
	if len(s.Enum) > 0 {
		var lits []string
		for _, e := range s.Enum {
			if e == nil {
				continue
			}
			b, _ := json.Marshal(e)
			lits = append(lits, string(b))
		}
		return strings.Join(lits, " | ")
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		var alts []string
		for _, x := range append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...) {
			alts = append(alts, g.tsType(x, input, indent))
		}
		return "(" + strings.Join(alts, " | ") + ")"
	}
	if len(s.AllOf) > 0 {
		var alts []string
		for _, x := range s.AllOf {
			alts = append(alts, g.tsType(x, input, indent))
		}
		return "(" + strings.Join(alts, " & ") + ")"
	}
	if s.Type == nil {
		return "unknown"
	}
	switch {
	case s.Type.Is("string"):
		return "string"
	case s.Type.Is("integer"):
		return "number"
	case s.Type.Is("number"):
		if input {
			return "DecimalInput"
		}
		return "Decimal"
	case s.Type.Is("boolean"):
		return "boolean"
	case s.Type.Is("array"):
		item := g.tsType(s.Items, input, indent)
		if strings.ContainsAny(item, " |&") {
			return "Array<" + item + ">"
		}
		return item + "[]"
	case s.Type.Is("object"):
		return g.tsObject(s, input, indent)
	}
	return "unknown"
}

func (g *tsGen) tsObject(s *openapi3.Schema, input bool, indent string) string {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var b strings.Builder
	b.WriteString("{\n")
	inner := indent + "  "
	var members []string
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		if p.Value != nil && p.Value.Description != "" && p.Ref == "" {
			b.WriteString(jsDoc(p.Value.Description, inner))
		}
		opt := "?"
		if required[k] {
			opt = ""
		}
		t := g.tsType(p, input, inner)
		members = append(members, t)
		fmt.Fprintf(&b, "%s%s%s: %s;\n", inner, tsKey(k), opt, t)
	}
	switch {
	case s.AdditionalProperties.Schema != nil:
		t := g.tsType(s.AdditionalProperties.Schema, input, inner)
		if len(members) > 0 && t != "unknown" {
			t = strings.Join(append([]string{t}, members...), " | ") + " | undefined"
		}
		fmt.Fprintf(&b, "%s[member: string]: %s;\n", inner, t)
	case s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has:
		// Declared members and any other: the others are additional fields,
		// named ADD_{name}. An index of every string would accept a misspelt
		// declared member, so an open object that does not say how its other
		// members are named cannot be typed.
		if len(s.Properties) > 0 && !strings.Contains(s.Description, additionalMembers) {
			if g.err == nil {
				g.err = fmt.Errorf("an object with properties and additionalProperties: true whose description does not say its other members are %s: "+
					"a TypeScript type would accept any misspelt member (%s)", additionalMembers, strings.Join(sortedKeys(s.Properties), ", "))
			}
		}
		fmt.Fprintf(&b, "%s[member: `ADD_${string}`]: unknown;\n", inner)
	}
	b.WriteString(indent + "}")
	if len(s.Properties) == 0 && s.AdditionalProperties.Schema == nil && (s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has) {
		return "Record<string, unknown>"
	}
	if len(s.Properties) == 0 && s.AdditionalProperties.Schema == nil {
		return "Record<string, never>"
	}
	return b.String()
}

func jsDoc(text, indent string) string {
	text = strings.TrimSpace(strings.ReplaceAll(text, "*/", "*\\/"))
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		return indent + "/** " + lines[0] + " */\n"
	}
	var b strings.Builder
	b.WriteString(indent + "/**\n")
	for _, l := range lines {
		b.WriteString(strings.TrimRight(indent+" * "+l, " ") + "\n")
	}
	b.WriteString(indent + " */\n")
	return b.String()
}

const tsHeader = "// Code generated by tools/sdkgen from openapi.yaml. DO NOT EDIT.\n"

func (g *tsGen) typesFile(ops []operation) ([]byte, error) {
	var b strings.Builder
	b.WriteString(tsHeader)
	b.WriteString(`
/**
 * An exact decimal (PostgreSQL numeric: amounts, prices, quantities, discounts, VAT rates) as the
 * decimal text the server sent, such as "1234567890123456.78": a JS number would lose digits.
 */
export type Decimal = string;

/** A decimal a request takes: its text (written as a JSON number, every digit kept) or a JS number. */
export type DecimalInput = Decimal | number;

`)
	names := sortedKeys(g.doc.Components.Schemas)
	for _, n := range names {
		s := g.doc.Components.Schemas[n].Value
		if s.Description != "" {
			b.WriteString(jsDoc(s.Description, ""))
		}
		fmt.Fprintf(&b, "export type %s = %s;\n\n", n, g.tsType(&openapi3.SchemaRef{Value: s}, g.input[n], ""))
		if g.err != nil {
			return nil, fmt.Errorf("schema %s: %w", n, g.err)
		}
	}

	// The universal list's modules and columns (x-list-modules).
	mods, err := listModules(ops)
	if err != nil {
		return nil, err
	}
	b.WriteString("/** The modules of the universal list (`commonListPaging`), from x-list-modules. */\nexport interface ListModules {\n")
	for _, m := range mods {
		var cols []string
		for _, c := range m.Columns {
			cols = append(cols, strconv.Quote(c))
		}
		add := "never"
		if m.AdditionalFields {
			add = "`ADD_${string}`"
		}
		fmt.Fprintf(&b, "  /** %s */\n  %d: { columns: %s; additional: %s };\n", m.Name, m.Code, strings.Join(cols, " | "), add)
	}
	b.WriteString("}\n\n")

	// Per operation: parameters, body and value.
	b.WriteString("/** Each operation's parameters (path and query; headers go in CallOptions), request body and decoded value. */\nexport interface Operations {\n")
	for _, op := range ops {
		fmt.Fprintf(&b, "  /** %s %s: %s */\n  %s: {\n", op.Method, op.Path, strings.TrimSuffix(op.Summary, "."), op.ID)
		b.WriteString("    params: " + g.paramsType(op, "    ") + ";\n")
		body := "never"
		if n := bodySchemaName(op.Op); n != "" && n != "EmptyBody" {
			body = n
		} else if n == "" && op.Op.RequestBody != nil {
			return nil, fmt.Errorf("%s: a request body that is not a named JSON schema", op.ID)
		}
		b.WriteString("    body: " + body + ";\n")
		value := op.ValueSchema
		if isEmptyValue(g.doc.Components.Schemas[op.ValueSchema].Value) {
			value = "void"
		}
		b.WriteString("    value: " + value + ";\n  };\n")
	}
	b.WriteString("}\n")
	return []byte(b.String()), nil
}

func (g *tsGen) paramsType(op operation, indent string) string {
	var b strings.Builder
	n := 0
	b.WriteString("{\n")
	for _, p := range op.Op.Parameters {
		v := p.Value
		if v.In != "path" && v.In != "query" {
			continue
		}
		n++
		if v.Description != "" {
			b.WriteString(jsDoc(v.Description, indent+"  "))
		}
		opt := "?"
		if v.Required {
			opt = ""
		}
		fmt.Fprintf(&b, "%s  %s%s: %s;\n", indent, tsKey(v.Name), opt, g.tsType(v.Schema, true, indent+"  "))
	}
	if n == 0 {
		return "Record<string, never>"
	}
	b.WriteString(indent + "}")
	return b.String()
}

type listModule struct {
	Code             int
	Name             string   `json:"name"`
	AdditionalFields bool     `json:"additionalFields"`
	Columns          []string `json:"columns"`
}

func listModules(ops []operation) ([]listModule, error) {
	for _, op := range ops {
		raw, ok := op.Op.Extensions["x-list-modules"]
		if !ok {
			continue
		}
		data, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		var m map[string]listModule
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: x-list-modules: %w", op.ID, err)
		}
		var out []listModule
		for k, v := range m {
			code, err := strconv.Atoi(k)
			if err != nil {
				return nil, fmt.Errorf("%s: x-list-modules: module %q is not a number", op.ID, k)
			}
			v.Code = code
			out = append(out, v)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
		return out, nil
	}
	return nil, fmt.Errorf("no operation has x-list-modules")
}

func (g *tsGen) operationsFile(ops []operation) ([]byte, error) {
	var b strings.Builder
	b.WriteString(tsHeader)
	b.WriteString(`
import type { Shape } from "./shape.js";

/** The version of the contract (info.version of openapi.yaml) this SDK was generated from. */
export const version = ` + strconv.Quote(g.doc.Info.Version) + `;

/** How the client calls each operation. */
export interface OperationInfo {
  readonly method: "GET" | "POST";
  readonly path: string;
  /** Names of the path parameters, in the order of the path. */
  readonly pathParams: readonly string[];
  /** Names of the query parameters. */
  readonly queryParams: readonly string[];
  /** Whether the operation takes a JSON body (false: it is sent none, or null where the contract has an empty body). */
  readonly body: boolean;
  /** Where the decimals of the body are. */
  readonly bodyShape: Shape;
  /** The schema x-value-schema names, "" for an empty value. */
  readonly value: string;
  /** Where the decimals of the value are. */
  readonly valueShape: Shape;
}

/** Every operation by operationId. */
export const operations = {
`)
	for _, op := range ops {
		var path, query []string
		for _, p := range op.Op.Parameters {
			switch p.Value.In {
			case "path":
				path = append(path, strconv.Quote(p.Value.Name))
			case "query":
				query = append(query, strconv.Quote(p.Value.Name))
			}
		}
		hasBody := false
		bodyShape := "0"
		if n := bodySchemaName(op.Op); n != "" && n != "EmptyBody" {
			hasBody = true
			bodyShape = strconv.Quote("#" + n)
			if !g.hasDecimal(&openapi3.SchemaRef{Ref: schemaPrefix + n}) {
				bodyShape = "0"
			}
		}
		value, valueShape := op.ValueSchema, "0"
		if isEmptyValue(g.doc.Components.Schemas[value].Value) {
			value = ""
		} else if g.hasDecimal(&openapi3.SchemaRef{Ref: schemaPrefix + value}) {
			valueShape = strconv.Quote("#" + value)
		}
		fmt.Fprintf(&b, "  %s: { method: %q, path: %q, pathParams: [%s], queryParams: [%s], body: %v, bodyShape: %s, value: %q, valueShape: %s },\n",
			op.ID, op.Method, op.Path, strings.Join(path, ", "), strings.Join(query, ", "), hasBody, bodyShape, value, valueShape)
	}
	b.WriteString("} as const satisfies Record<string, OperationInfo>;\n\n")
	b.WriteString("/** Where the decimals are in each named schema that has any. */\nexport const shapes: Readonly<Record<string, Shape>> = {\n")
	for _, n := range sortedKeys(g.doc.Components.Schemas) {
		r := g.doc.Components.Schemas[n]
		if !g.hasDecimal(&openapi3.SchemaRef{Ref: schemaPrefix + n}) {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s,\n", n, g.shape(&openapi3.SchemaRef{Value: r.Value}))
	}
	b.WriteString("};\n")
	return []byte(b.String()), nil
}
