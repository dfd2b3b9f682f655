//go:build tools

// Package tools pins the versions of the Go tools the Makefile runs (the code
// generator and staticcheck) in go.mod and go.sum, so that `make generate` and
// `make lint` need nothing installed beyond Go.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
