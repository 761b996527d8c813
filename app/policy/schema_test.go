package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

func compilePolicySchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	data, err := PolicySchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("agent.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("agent.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	return s, tree
}

// TestSchemaHasEveryField walks the raw types and finds each key in the
// schema, so that a field added to the types cannot be missing from it.
func TestSchemaHasEveryField(t *testing.T) {
	_, tree := compilePolicySchema(t)
	var walk func(typ reflect.Type, node map[string]any, path string)
	walk = func(typ reflect.Type, node map[string]any, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
			if items, ok := node["items"].(map[string]any); ok {
				node = items
			}
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		if anyOf, ok := node["anyOf"].([]any); ok { // the shorthand form
			node = anyOf[len(anyOf)-1].(map[string]any)
		}
		props, _ := node["properties"].(map[string]any)
		for f := range typ.Fields() {
			key := yamlKey(f)
			if key == "" {
				continue
			}
			child, ok := props[key].(map[string]any)
			if !ok {
				t.Errorf("%s is not in the schema", yamlPathJoin(path, key))
				continue
			}
			walk(f.Type, child, yamlPathJoin(path, key))
		}
		if node["additionalProperties"] != false {
			t.Errorf("%s: the schema must refuse unknown keys", path)
		}
	}
	walk(reflect.TypeFor[RawPolicy](), tree, "")
}

// yamlToJSON reads a YAML file as the JSON value an editor validates.
func yamlToJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestSchemaAcceptsValidFiles(t *testing.T) {
	s, _ := compilePolicySchema(t)
	files, err := filepath.Glob("testdata/valid/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid policy files: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(yamlToJSON(t, data)); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	if err := s.Validate(yamlToJSON(t, []byte(builtinPolicy))); err != nil {
		t.Errorf("built-in defaults: %v", err)
	}
}

// TestSchemaRefusesBrokenShapes checks that the schema is not vacuous: the
// mistakes of shape that ParsePolicy refuses, it refuses too.
func TestSchemaRefusesBrokenShapes(t *testing.T) {
	s, _ := compilePolicySchema(t)
	for _, name := range []string{"unknown-key.yml", "wrong-type.yml", "bad-duration.yml", "bad-size.yml", "bad-approval.yml", "bad-temperature.yml"} {
		data, err := os.ReadFile(filepath.Join("testdata/invalid", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(yamlToJSON(t, data)); err == nil {
			t.Errorf("%s: accepted by the schema", name)
		}
	}
}
