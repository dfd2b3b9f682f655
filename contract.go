// Package crm holds the contract of the Customer Relationship Service,
// openapi.yaml, exactly as it is written, for the server to serve at
// GET /openapi.yaml. The code generated from it is in package gen.
package crm

import _ "embed"

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the text of openapi.yaml. The slice is shared: do not change it.
func OpenAPI() []byte { return openapiYAML }
