package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/openapi"
)

// The contract is served by operations of its own (tag meta), so that the
// auth matrix calls them and the tests check their answers like any other.

// publishContract converts the spec to JSON for GetOpenAPIJSON, once, and
// serves the API reference page that renders it at /docs.
func (s *Server) publishContract(e gen.EchoRouter) error {
	doc, err := specJSON()
	if err != nil {
		return fmt.Errorf("load spec: %w", err)
	}
	s.specJSON = doc
	return registerDocs(e)
}

// GetOpenAPIYAML serves openapi.yaml byte for byte as embedded.
func (s *Server) GetOpenAPIYAML(context.Context, gen.GetOpenAPIYAMLRequestObject) (gen.GetOpenAPIYAMLResponseObject, error) {
	return gen.GetOpenAPIYAML200ApplicationyamlResponse{
		Body:          bytes.NewReader(openapi.YAML),
		ContentLength: int64(len(openapi.YAML)),
	}, nil
}

// GetOpenAPIJSON serves the same document as JSON, converted once in New.
func (s *Server) GetOpenAPIJSON(context.Context, gen.GetOpenAPIJSONRequestObject) (gen.GetOpenAPIJSONResponseObject, error) {
	return gen.GetOpenAPIJSON200JSONResponse(s.specJSON), nil
}

// specJSON converts the spec to JSON once, into the generated response
// type. That type is a map, whose keys encoding/json sorts, so each
// top-level value is kept as converted JSON: a request only passes those
// bytes through the encoder instead of walking a tree of maps, and the
// paths and tags keep the order they are written in.
func specJSON() (gen.OpenAPIDocument, error) {
	b, err := openapi.JSON()
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("split the spec's JSON: %w", err)
	}
	doc := make(gen.OpenAPIDocument, len(top))
	for key, value := range top {
		doc[key] = value
	}
	return doc, nil
}
