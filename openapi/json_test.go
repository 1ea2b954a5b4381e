package openapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// TestJSONIsTheSameDocument loads the spec from the YAML and from its JSON
// and compares what kin-openapi, the server's own validator, makes of each.
func TestJSONIsTheSameDocument(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatal("JSON() is not valid JSON")
	}
	fromYAML, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	fromJSON, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatalf("load the JSON: %v", err)
	}
	if err := fromJSON.Validate(loader.Context); err != nil {
		t.Fatalf("validate the JSON: %v", err)
	}
	want, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(fromJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the spec loaded from JSON() differs from the spec loaded from openapi.yaml")
	}
}

// TestJSONKeepsPathOrder checks that the JSON lists the paths in the order
// of the YAML, which is the order the docs page shows.
func TestJSONKeepsPathOrder(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		t.Fatal(err)
	}
	want := mappingKeys(doc.Content[0], "paths")
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ Paths json.RawMessage }
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	got, err := objectKeys(top.Paths)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("paths in the JSON:\n%q\nwant the YAML's order:\n%q", got, want)
	}
}

// mappingKeys returns the keys of the mapping under key in m, in order.
func mappingKeys(m *yaml.Node, key string) []string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			var keys []string
			v := m.Content[i+1]
			for j := 0; j+1 < len(v.Content); j += 2 {
				keys = append(keys, v.Content[j].Value)
			}
			return keys
		}
	}
	return nil
}

// objectKeys returns the keys of a JSON object in the order written.
func objectKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

var writeJSONTests = []struct {
	yaml, want string
}{
	{`{b: 1, a: 2}`, `{"b":1,"a":2}`},
	{`"200": {description: OK}`, `{"200":{"description":"OK"}}`},
	{`200: x`, `{"200":"x"}`},
	{`[1, 2.5, -3e2, true, null, ~, "1", 1.0.0]`, `[1,2.5,-300,true,null,null,"1","1.0.0"]`},
	{`when: 2024-05-01T12:00:00Z`, `{"when":"2024-05-01T12:00:00Z"}`},
	{`text: "<b> & \"q\""`, `{"text":"\u003cb\u003e \u0026 \"q\""}`},
	{"a: &x {k: v}\nb: *x", `{"a":{"k":"v"},"b":{"k":"v"}}`},
	{"block: |\n  two\n  lines\n", `{"block":"two\nlines\n"}`},
	{`{}`, `{}`},
	{`[]`, `[]`},
}

func TestWriteJSON(t *testing.T) {
	for _, tt := range writeJSONTests {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tt.yaml), &doc); err != nil {
			t.Fatalf("yaml.Unmarshal(%q): %v", tt.yaml, err)
		}
		var buf bytes.Buffer
		if err := writeJSON(&buf, &doc); err != nil {
			t.Errorf("writeJSON(%q): %v", tt.yaml, err)
			continue
		}
		if got := buf.String(); got != tt.want {
			t.Errorf("writeJSON(%q) = %s, want %s", tt.yaml, got, tt.want)
		}
	}
}

var writeJSONErrors = []string{
	"base: &b {k: v}\nc:\n  <<: *b",
	"? [a, b]\n: c",
	"x: .inf",
	"x: .nan",
}

func TestWriteJSONRefuses(t *testing.T) {
	for _, in := range writeJSONErrors {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(in), &doc); err != nil {
			t.Fatalf("yaml.Unmarshal(%q): %v", in, err)
		}
		var buf bytes.Buffer
		if err := writeJSON(&buf, &doc); err == nil {
			t.Errorf("writeJSON(%q) = %s, want an error", in, buf.String())
		}
	}
}
