package policy

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"go.yaml.in/yaml/v3"
)

// A policy or server file is decoded by walking yaml.v3's node tree against
// the raw types rather than by yaml.Decoder with KnownFields(true): the
// decoder is just as strict, but it names Go types instead of the field the
// admin wrote ("field lable not found in type policy.RawTrigger") and stops at
// the first structural error. The walk reports every unknown key, wrong type
// and repeated key with its file, line and dotted path, and remembers the
// line of every value so that later checks (globs, caps) can point at it.
// Scalars are still converted by yaml.v3 (Node.Decode), so YAML's own rules
// for numbers and booleans apply.

// fieldError is one problem in a file, at a line, about a field.
type fieldError struct {
	file string
	line int
	path string // dotted, with list indexes: "checks[1].timeout"
	msg  string
}

func (e fieldError) String() string {
	var b strings.Builder
	b.WriteString(e.file)
	if e.line > 0 {
		fmt.Fprintf(&b, ":%d", e.line)
	}
	b.WriteString(": ")
	if e.path != "" {
		b.WriteString(e.path + ": ")
	}
	b.WriteString(e.msg)
	return b.String()
}

// maxReported bounds the problems listed for one file, so that a file of
// garbage still makes a readable comment.
const maxReported = 20

// fieldErrors turns collected problems into one *Error whose message lists
// them, one a line, or nil when there are none.
func fieldErrors(errs []fieldError) error {
	if len(errs) == 0 {
		return nil
	}
	var lines []string
	for _, e := range errs[:min(len(errs), maxReported)] {
		lines = append(lines, e.String())
	}
	if n := len(errs) - maxReported; n > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", n))
	}
	return &app.Error{Code: app.EInvalid, Message: strings.Join(lines, "\n")}
}

// yamlWalker walks one YAML document into a raw struct.
type yamlWalker struct {
	file  string
	lines map[string]int // path -> line of the value written there
	errs  []fieldError
}

// decodeFile decodes data, the contents of file, into out (a pointer to a
// raw struct). It returns the line of every value it set, by path, and
// every problem found. An empty document sets nothing.
func decodeFile(file string, data []byte, out any) (map[string]int, []fieldError) {
	d := &yamlWalker{file: file, lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return d.lines, []fieldError{syntaxError(file, err)}
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if err == io.EOF {
			break
		}
		if err != nil {
			return d.lines, []fieldError{syntaxError(file, err)}
		}
		if len(next.Content) > 0 && next.Content[0].ShortTag() != "!!null" {
			return d.lines, []fieldError{{file: file, line: next.Line, msg: "a second YAML document (after ---); the file must hold one"}}
		}
	}
	if len(doc.Content) == 0 {
		return d.lines, nil
	}
	d.value(doc.Content[0], reflect.ValueOf(out).Elem(), "")
	return d.lines, d.errs
}

// parserProblem matches the messages of yaml.v3's parser, as opposed to its
// scanner. The parser reports the line of its context (where an unclosed
// flow collection or block began) counted from zero, so its "line N" is
// the line before; the scanner counts from one.
var parserProblem = regexp.MustCompile(`^did not find expected (<document start>|node content|key|'-' indicator|',' or '\]'|',' or '\}')$`)

// syntaxError places yaml.v3's "yaml: line N: ..." at its line.
func syntaxError(file string, err error) fieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if _, err := fmt.Sscanf(msg, "line %d:", &line); err == nil {
		_, msg, _ = strings.Cut(msg, ": ")
		if parserProblem.MatchString(msg) {
			line++
		}
	}
	return fieldError{file: file, line: line, msg: "not valid YAML: " + msg}
}

func (d *yamlWalker) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, fieldError{file: d.file, line: n.Line, path: path, msg: fmt.Sprintf(format, args...)})
}

// yamlShorthand is implemented by raw structs that may also be written as a
// single value, which then sets the named field: "shell: auto" for
// "shell: {policy: auto}".
type yamlShorthand interface {
	shorthandField() string
}

// value decodes n into v and reports whether it did; on failure v is left
// as it was, so a value that did not decode counts as unset.
func (d *yamlWalker) value(n *yaml.Node, v reflect.Value, path string) bool {
	at := n // where the value is used, an alias rather than its anchor
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return true // "key:" or "key: null" leaves the value unset
	}
	d.lines[path] = at.Line
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if !d.value(at, elem.Elem(), path) {
			return false
		}
		v.Set(elem)
		return true
	case reflect.Struct:
		return d.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(at, path, "expected a list, not %s", yamlKindOf(n))
			return false
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		ok := true
		for i, item := range n.Content {
			ok = d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)) && ok
		}
		if ok {
			v.Set(s)
		}
		return ok
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(at, path, "expected a single value, not %s", yamlKindOf(n))
		return false
	}
	// yaml.v3 would truncate 1.5 into an int; the tag check refuses it.
	if tags := scalarTags(v.Kind()); tags != nil && !slices.Contains(tags, n.ShortTag()) || n.Decode(v.Addr().Interface()) != nil {
		d.fail(at, path, "%q is not %s", n.Value, goKindName(v.Kind()))
		return false
	}
	return true
}

// scalarTags lists the YAML tags a scalar of kind k may have; nil: any.
func scalarTags(k reflect.Kind) []string {
	switch k {
	case reflect.Bool:
		return []string{"!!bool"}
	case reflect.Int, reflect.Int64:
		return []string{"!!int"}
	case reflect.Float64:
		return []string{"!!int", "!!float"}
	}
	return nil
}

// mapping decodes a mapping into a struct key by key, so that one bad key
// hides neither the other problems nor the keys that decoded.
func (d *yamlWalker) mapping(n *yaml.Node, v reflect.Value, path string) bool {
	if n.Kind == yaml.ScalarNode {
		if s, ok := v.Addr().Interface().(yamlShorthand); ok {
			f, _ := yamlField(v, s.shorthandField())
			return d.value(n, f, path+"."+s.shorthandField())
		}
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping of keys to values, not %s", yamlKindOf(n))
		return false
	}
	seen := map[string]int{}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		p := yamlPathJoin(path, cmp.Or(key.Value, `""`))
		if first, dup := seen[key.Value]; dup {
			d.fail(key, p, "is set twice (first on line %d)", first)
			ok = false
			continue
		}
		seen[key.Value] = key.Line
		f, known := yamlField(v, key.Value)
		if key.ShortTag() == "!!merge" {
			d.fail(key, path, "merge keys (<<) are not supported; write the keys out")
			ok = false
			continue
		}
		if !known {
			d.fail(key, p, "unknown key%s", suggestKey(key.Value, yamlKeys(v.Type())))
			ok = false
			continue
		}
		ok = d.value(val, f, p) && ok
	}
	return ok
}

// yamlKindOf names a node's kind the way a YAML author thinks of it.
func yamlKindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("the value %q", n.Value)
}

func goKindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return "a " + k.String()
}

func yamlPathJoin(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// yamlKey returns the key a struct field is written as, or "" for fields
// that are not part of the file.
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// yamlKeys lists the keys of a raw struct type, in declaration order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if k := yamlKey(f); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func yamlField(v reflect.Value, key string) (reflect.Value, bool) {
	f, ok := yamlStructField(v.Type(), key)
	if !ok {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(f.Index), true
}

// yamlStructField returns the field of struct type t written as key.
func yamlStructField(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if k := yamlKey(f); k != "" && k == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// suggestKey names the closest known key to a misspelt one, or lists the
// known keys when none is close.
func suggestKey(key string, known []string) string {
	best, dist := "", 3
	for _, k := range known {
		if d := levenshtein(key, k); d < dist {
			best, dist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (expected one of: %s)", strings.Join(known, ", "))
}

// levenshtein is the Levenshtein distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
