package openapi

import (
	"fmt"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestNullableOnlyBesideAType: in OpenAPI 3.0, the spec's version,
// `nullable: true` adds null to the `type` of its own schema object, and
// only to it; beside allOf, oneOf, anyOf or $ref the schemas combined still
// refuse null, so strict generated clients refuse a null there. kin-openapi,
// which checks every answer of the tests, lets such a null through, so
// this rule keeps the construct out of the spec (an absent property says
// "none" to every client).
func TestNullableOnlyBesideAType(t *testing.T) {
	var doc any
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, node any)
	walk = func(path string, node any) {
		switch n := node.(type) {
		case map[string]any:
			if n["nullable"] == true {
				if _, typed := n["type"]; !typed {
					t.Errorf("%s: nullable without a type beside it admits no null", path)
				}
				for _, key := range []string{"allOf", "oneOf", "anyOf", "$ref"} {
					if _, ok := n[key]; ok {
						t.Errorf("%s: nullable beside %s admits no null in OpenAPI 3.0", path, key)
					}
				}
			}
			for key, value := range n {
				walk(path+"/"+key, value)
			}
		case []any:
			for i, value := range n {
				walk(fmt.Sprintf("%s/%d", path, i), value)
			}
		}
	}
	walk("", doc)
}
