package main

import "github.com/getkin/kin-openapi/openapi3"

func tsSDK(dir string, doc *openapi3.T, ops []operation) error { return nil }
