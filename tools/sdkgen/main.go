// Command sdkgen writes the typed layers of the client SDKs from the contract:
// the Go SDK's operations (sdk/go/crm/operations.gen.go), over the client that
// oapi-codegen puts into the SDK's package api (sdk/go/crm/api), and the TypeScript SDK's types and
// operation table (sdk/typescript/src/types.ts, operations.ts), with the
// package's version taken from info.version. Everything it needs comes from
// openapi.yaml (each operation's x-value-schema names its payload, the universal
// list's x-list-modules its columns) and from sdk/go/crm/api/api.gen.go (the Go
// client's signatures), so `make generate` follows any change of the contract.
//
// Usage (`make generate` runs it from gen/, after oapi-codegen, with -root ..):
//
//	go run ./tools/sdkgen
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		return fmt.Errorf("load openapi.yaml: %w", err)
	}
	ops, err := operations(doc)
	if err != nil {
		return err
	}
	goSrc, err := goSDK(filepath.Join(root, "sdk", "go", "crm", "api", "api.gen.go"), doc, ops)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "sdk", "go", "crm", "operations.gen.go"), goSrc, 0o644); err != nil {
		return err
	}
	return tsSDK(filepath.Join(root, "sdk", "typescript"), doc, ops)
}

// operation is what both SDKs need of one operation of the contract.
type operation struct {
	ID          string // operationId
	Method      string // GET, POST
	Path        string
	Summary     string
	ValueSchema string // the name under components/schemas that x-value-schema points to
	Op          *openapi3.Operation
}

const schemaPrefix = "#/components/schemas/"

// operations lists the contract's operations sorted by operationId, each with
// the schema its x-value-schema names; an operation without one is an error.
func operations(doc *openapi3.T) ([]operation, error) {
	var ops []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ref, _ := op.Extensions["x-value-schema"].(string)
			if !strings.HasPrefix(ref, schemaPrefix) {
				return nil, fmt.Errorf("%s %s: x-value-schema %q is not a reference into components/schemas", method, path, ref)
			}
			name := strings.TrimPrefix(ref, schemaPrefix)
			if doc.Components.Schemas[name] == nil {
				return nil, fmt.Errorf("%s: x-value-schema names %q, which is not a schema", op.OperationID, name)
			}
			if op.OperationID == "" {
				return nil, fmt.Errorf("%s %s: no operationId", method, path)
			}
			ops = append(ops, operation{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, ValueSchema: name, Op: op})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	return ops, nil
}

// isEmptyValue reports whether a value schema is the empty string (nothing to return).
func isEmptyValue(s *openapi3.Schema) bool {
	return s.Type.Is("string") && s.MaxLength != nil && *s.MaxLength == 0
}

// bodySchemaName is the schema name of an operation's JSON request body, or "".
func bodySchemaName(op *openapi3.Operation) string {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return ""
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return ""
	}
	return strings.TrimPrefix(mt.Schema.Ref, schemaPrefix)
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
