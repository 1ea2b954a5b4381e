// Package openapi holds the service's contract, openapi.yaml, embedded as
// written: the server validates requests against it and serves it byte for
// byte, and oapi-codegen generates gen/ from the same file. The npm tooling
// around it (linter, TypeScript client check, the docs page's assets, the
// browser test) is pinned in package.json here, the repository's only one.
package openapi

import (
	_ "embed"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// YAML is openapi.yaml as written.
//
//go:embed openapi.yaml
var YAML []byte

// Load parses and validates the spec.
func Load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(YAML)
	if err != nil {
		return nil, fmt.Errorf("parse openapi.yaml: %w", err)
	}
	if err := spec.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate openapi.yaml: %w", err)
	}
	return spec, nil
}
