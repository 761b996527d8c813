package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// PolicySchema returns the JSON Schema (draft 2020-12) of .github/agent.yml,
// for editors: generated from RawPolicy by reflection, so that it cannot
// drift from what ParsePolicy reads. Keys come from the yaml tags,
// descriptions from the desc tags, enums from the enum tags, a number's
// bounds from the zero and max tags; RawDuration, RawSize and Approval
// describe themselves. It checks shapes only: caps and cross-field rules
// are the server's, reported by BuildPolicy.
func PolicySchema() ([]byte, error) {
	s := schemaOf(reflect.TypeFor[RawPolicy](), "")
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = "agentbot repository policy (" + PolicyPath + ")"
	s["description"] = "Read from the default branch only. Unknown keys are errors. " +
		"Merged over the built-in defaults and the organisation's .github repository's file; bounded by the server's caps."
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode policy schema: %w", err)
	}
	return append(out, '\n'), nil
}

// selfSchema is implemented by raw leaf types whose schema says more than
// their Go kind: a duration is a string of a certain shape.
type selfSchema interface {
	jsonSchema() map[string]any
}

// schemaOf returns the schema of values of type t; enum is the field's
// enum tag, which applies to a string or to a list's strings.
func schemaOf(t reflect.Type, enum string) map[string]any {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := reflect.Zero(t).Interface().(selfSchema); ok {
		return s.jsonSchema()
	}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		for f := range t.Fields() {
			key := yamlKey(f)
			if key == "" {
				continue
			}
			p := schemaOf(f.Type, f.Tag.Get("enum"))
			if d := f.Tag.Get("desc"); d != "" {
				p["description"] = d
			}
			num := p
			if items, ok := p["items"].(map[string]any); ok {
				num = items // a list's bounds are its numbers'
			}
			if f.Tag.Get("zero") == "allowed" {
				// A count for which 0 means "none", or a temperature.
				delete(num, "exclusiveMinimum")
				num["minimum"] = 0
			}
			if m := f.Tag.Get("max"); m != "" {
				num["maximum"] = json.Number(m)
			}
			props[key] = p
		}
		obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if sh, ok := reflect.New(t).Interface().(yamlShorthand); ok {
			// Written either as the one value or as the mapping.
			field, _ := yamlStructField(t, sh.shorthandField())
			return map[string]any{"anyOf": []any{schemaOf(field.Type, field.Tag.Get("enum")), obj}}
		}
		return obj
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), enum)}
	case reflect.String:
		if enum != "" {
			return map[string]any{"type": "string", "enum": strings.Split(enum, ",")}
		}
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer", "exclusiveMinimum": 0}
	case reflect.Float64:
		return map[string]any{"type": "number", "exclusiveMinimum": 0}
	}
	panic(fmt.Sprintf("policy schema: no JSON type for %s", t))
}

func (RawDuration) jsonSchema() map[string]any {
	return map[string]any{
		"type":        "string",
		"pattern":     `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		"description": "A duration such as 90s, 15m or 1h30m.",
	}
}

func (RawSize) jsonSchema() map[string]any {
	return map[string]any{
		"type":        []any{"string", "integer"},
		"pattern":     `^[0-9]+(\.[0-9]+)? ?([kKmMgGtTpP][iI]?[bB]?|[bB])?$`,
		"description": "A size in bytes, or with a binary unit as docker run --memory reads it: 512MiB, 4GiB, 4g.",
	}
}

func (Approval) jsonSchema() map[string]any {
	return map[string]any{"type": "string", "enum": []any{
		string(ApprovalAuto), string(ApprovalAllowlist), string(ApprovalHuman), string(ApprovalOff),
	}}
}
