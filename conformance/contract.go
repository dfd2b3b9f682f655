// Package conformance checks replies of a running server against openapi.yaml:
// the envelope and HTTP status with kin-openapi, and the decoded `value` of a
// successful reply against the schema its operation names in x-value-schema.
// It also replays the documented cases of cases/*.yaml against any server.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Contract is a loaded and validated openapi.yaml.
type Contract struct {
	Doc    *openapi3.T
	router routers.Router
}

// LoadContract reads an OpenAPI document from a file and checks that it is valid.
func LoadContract(path string) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return newContract(loader, doc)
}

// ParseContract reads an OpenAPI document from memory and checks that it is valid.
func ParseContract(data []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("parse contract: %w", err)
	}
	return newContract(loader, doc)
}

func newContract(loader *openapi3.Loader, doc *openapi3.T) (*Contract, error) {
	if err := resolveHeaderContent(doc); err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the contract is not valid OpenAPI: %w", err)
	}
	doc.Servers = nil // match paths whatever the host
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the contract: %w", err)
	}
	return &Contract{Doc: doc, router: router}, nil
}

// ErrNoOperation is returned by Check for a request no operation of the contract matches.
var ErrNoOperation = errors.New("no operation of the contract matches the request")

// Check validates one exchange: the HTTP status must be documented for the
// operation, the body must match its schema, and the decoded value of a
// successful reply must match the operation's x-value-schema. An empty value
// decodes as the empty string.
func (c *Contract) Check(method, target string, status int, header http.Header, body []byte) error {
	req := httptest.NewRequest(method, target, nil)
	route, pathParams, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%w: %s %s", ErrNoOperation, method, target)
	}
	// The default reply (any other status) documents what generators need
	// (X-Value-Schema); an operation of this server answers only the statuses
	// it lists.
	if route.Operation.Responses.Status(status) == nil {
		return fmt.Errorf("%s %s: reply %d is not a status the operation lists", method, route.Path, status)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s: reply %d does not match the contract: %w", method, route.Path, status, err)
	}
	if status == http.StatusNotModified {
		if len(body) > 0 {
			return fmt.Errorf("%s %s: reply 304 has a body", method, route.Path)
		}
		return nil // no envelope: the client keeps the one it has
	}
	var env struct {
		Status string `json:"status"`
		Value  string `json:"value"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s %s: reply is not JSON: %w", method, route.Path, err)
	}
	if env.Status != "success" {
		return nil
	}
	schema, name, err := c.ValueSchema(route.Operation)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, route.Path, err)
	}
	value, err := DecodeValue(env.Value)
	if err != nil {
		return fmt.Errorf("%s %s: value: %w", method, route.Path, err)
	}
	if err := schema.VisitJSON(value, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s %s: value does not match %s: %w", method, route.Path, name, err)
	}
	return nil
}

// ValueSchema returns the schema an operation names in x-value-schema.
func (c *Contract) ValueSchema(op *openapi3.Operation) (*openapi3.Schema, string, error) {
	ref, _ := op.Extensions["x-value-schema"].(string)
	name, found := strings.CutPrefix(ref, "#/components/schemas/")
	if !found {
		return nil, "", fmt.Errorf("operation %s has no x-value-schema naming a component schema", op.OperationID)
	}
	s := c.Doc.Components.Schemas[name]
	if s == nil || s.Value == nil {
		return nil, "", fmt.Errorf("x-value-schema %q: no such component schema", ref)
	}
	return s.Value, name, nil
}

// DecodeValue decodes an envelope's value: JSON text, or "" for the empty
// string. Numbers become float64, as kin-openapi validates them.
func DecodeValue(value string) (any, error) {
	if value == "" {
		return "", nil
	}
	return decodeJSON([]byte(value), false)
}

// resolveHeaderContent resolves the schema references in the content of
// response headers (X-Value-Schema of the default replies), which kin-openapi's
// loader leaves unresolved: it follows a header's schema but not its content.
func resolveHeaderContent(doc *openapi3.T) error {
	resolve := func(headers openapi3.Headers) error {
		for name, h := range headers {
			if h == nil || h.Value == nil {
				continue
			}
			for _, mt := range h.Value.Content {
				if mt == nil || mt.Schema == nil || mt.Schema.Value != nil {
					continue
				}
				target, ok := strings.CutPrefix(mt.Schema.Ref, "#/components/schemas/")
				s := doc.Components.Schemas[target]
				if !ok || s == nil || s.Value == nil {
					return fmt.Errorf("header %s: unresolved reference %q", name, mt.Schema.Ref)
				}
				mt.Schema.Value = s.Value
			}
		}
		return nil
	}
	for _, r := range doc.Components.Responses {
		if r != nil && r.Value != nil {
			if err := resolve(r.Value.Headers); err != nil {
				return err
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r != nil && r.Value != nil {
					if err := resolve(r.Value.Headers); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Writes reports whether a request may change what the server stores: its
// operation takes an Idempotency-Key header (the contract's mark of every
// operation that writes), or no operation matches it and its method is not
// GET, HEAD or OPTIONS (counted as a write, to be safe).
func (c *Contract) Writes(method, target string) bool {
	route, _, err := c.router.FindRoute(httptest.NewRequest(method, target, nil))
	if err != nil {
		return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
	}
	for _, p := range route.Operation.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInHeader && http.CanonicalHeaderKey(p.Value.Name) == "Idempotency-Key" {
			return true
		}
	}
	return false
}

// valueIsDone reports whether the operation's value is the count of Done
// (such as the 1 of a goods insert), not the id of a new record.
func (c *Contract) valueIsDone(method, target string) bool {
	route, _, err := c.router.FindRoute(httptest.NewRequest(method, target, nil))
	if err != nil {
		return false
	}
	ref, _ := route.Operation.Extensions["x-value-schema"].(string)
	return ref == "#/components/schemas/Done"
}
