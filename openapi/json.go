package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// JSON returns openapi.yaml converted to JSON, for the tools that read only
// JSON. It cannot be the YAML byte for byte; it is the same document, with
// every mapping's keys in the order they are written, so that a reader of
// the JSON meets the paths and tags in the YAML's order. Keys are taken as
// strings (JSON has no other) and anchors are expanded.
func JSON() ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("parse openapi.yaml: %w", err)
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, &doc); err != nil {
		return nil, fmt.Errorf("convert openapi.yaml to JSON: %w", err)
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document, have %d", n.Line, len(n.Content))
		}
		return writeJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			if key.Kind != yaml.ScalarNode || key.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: a key must be a plain scalar", key.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeValue(buf, key.Value); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeJSON(buf, value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			buf.WriteString("null")
			return nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			if err := writeValue(buf, v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			return nil
		}
		// Strings, and timestamps as written: OpenAPI has no date type of
		// its own, so tools read an unquoted date as the string it is.
		return writeValue(buf, n.Value)
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

func writeValue(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}
