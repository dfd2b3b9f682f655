//go:build tools

// Package tools pins the code generator's version in go.mod and go.sum, so that
// `make generate` needs nothing installed beyond Go.
package tools

import _ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
