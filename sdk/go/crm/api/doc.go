// Package api holds what oapi-codegen generates from openapi.yaml for the Go
// SDK: the models (the payloads, request bodies and parameters the SDK's
// methods take and return) and the plain client that returns the
// *http.Response, which crm.Client.Raw gives. It has nothing of the server.
// Never edit api.gen.go; change openapi.yaml and run `make generate`.
package api
