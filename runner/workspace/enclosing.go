package workspace

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
)

// The tests a change touches are found from the code its lines lie in,
// never from a diff's hunk headers: git names there the last function
// that begins before the hunk, which is often not the one an added line
// is in. Each language is read as well as its structure allows: Go is
// parsed; Python is read by its indentation; JavaScript and TypeScript by
// the brackets of their test( and it( calls. Where that is not enough to
// be sure, Unsure says so.

// enclosingTests returns the tests of file name (its content src, after
// the change) that lines lie in, and why the list may not be all the
// change touches, or "". deleted are lines before which lines were
// removed: a removal inside a test changes it too.
func enclosingTests(name, src string, lines, deleted []int) (tests []string, unsure string) {
	switch language(name) {
	case langGo:
		return goEnclosing(name, src, lines, deleted)
	case langPython:
		return pyEnclosing(src, lines, deleted)
	case langJS:
		return jsEnclosing(src, lines, deleted)
	}
	return nil, ""
}

// span is the lines a test (or another definition) covers, from 1.
type span struct {
	name       string
	start, end int
	test       bool
}

// innermost is the last of spans (in order of their start) that holds
// line: the innermost, since an inner definition starts after its outer
// one. A removal at line holds when it lies after the span's first line
// and up to its last: lines removed just before a definition are not in
// it.
func innermost(spans []span, line int, removal bool) (span, bool) {
	var found span
	ok := false
	for _, s := range spans {
		first := s.start
		if removal {
			first++
		}
		if first <= line && line <= s.end {
			found, ok = s, true
		}
	}
	return found, ok
}

// collect names the test each changed line lies in, through spans, and
// lists the other definitions lines lie in. A line in no definition at
// all (an import, a comment between functions) touches no test.
func collect(spans []span, lines, deleted []int) (tests, others []string) {
	add := func(line int, removal bool) {
		s, ok := innermost(spans, line, removal)
		switch {
		case !ok:
		case s.test:
			tests = addName(tests, s.name)
		default:
			others = addName(others, s.name)
		}
	}
	for _, l := range lines {
		add(l, false)
	}
	for _, l := range deleted {
		add(l, true)
	}
	return tests, others
}

// outside says that lines of a file changed in definitions that are no
// tests, which every test may use.
func outside(others []string) string {
	if len(others) == 0 {
		return ""
	}
	return "lines changed outside any test, in " + strings.Join(others, ", ") + ", which any test may use"
}

// goEnclosing parses a Go test file and takes each changed line's
// enclosing top-level func Test…, Fuzz…, Benchmark… or Example….
func goEnclosing(name, src string, lines, deleted []int) ([]string, string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, "it does not parse as Go, so the tests its changed lines lie in are not known"
	}
	var spans []span
	for _, d := range f.Decls {
		s := span{start: fset.Position(d.Pos()).Line, end: fset.Position(d.End()).Line}
		switch d := d.(type) {
		case *ast.FuncDecl:
			s.name = d.Name.Name
			if d.Recv == nil && testName(langGo, "func "+s.name+"(") != "" {
				s.test = true
			} else {
				s.name = "func " + s.name
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			s.name = d.Tok.String() + " " + declName(d)
		}
		spans = append(spans, s)
	}
	tests, others := collect(spans, lines, deleted)
	return tests, outside(others)
}

// declName names a var, const or type declaration by its first name.
func declName(d *ast.GenDecl) string {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.ValueSpec:
			return s.Names[0].Name
		case *ast.TypeSpec:
			return s.Name.Name
		}
	}
	return "declaration"
}

var pyDef = regexp.MustCompile(`^(\s*)(?:async\s+)?(def|class)\s+(\w+)`)

// pyEnclosing reads a Python test file by its indentation: a line belongs
// to each def and class above it that is indented less, up to the first
// line at the outermost level. A test is a def test… at the top or in a
// class Test…, named pytest's way (TestX::test_y); a class Test… holds
// whatever changes in it outside its methods. Decorators belong to the
// def below them.
func pyEnclosing(src string, lines, deleted []int) ([]string, string) {
	text := strings.Split(src, "\n")
	var spans []span
	type open struct {
		indent int
		s      span
		class  string // the enclosing class Test…, for a method's name
	}
	var stack []open
	closeTo := func(indent, line int) {
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			o.s.end = line
			spans = append(spans, o.s)
		}
	}
	last := 0 // the last line that is not blank
	decorated := 0
	for i, l := range text {
		trim := strings.TrimSpace(l)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if strings.HasPrefix(trim, "@") {
			if decorated == 0 {
				closeTo(indent, last)
				decorated = i + 1
			}
			last = i + 1
			continue
		}
		m := pyDef.FindStringSubmatch(l)
		if m == nil {
			closeTo(indent, last)
			last = i + 1
			decorated = 0
			continue
		}
		closeTo(indent, last)
		start := i + 1
		if decorated > 0 {
			start = decorated
		}
		o := open{indent: indent, s: span{name: m[3], start: start}}
		var outer open
		if len(stack) > 0 {
			outer = stack[len(stack)-1]
		}
		switch {
		case m[2] == "class" && strings.HasPrefix(m[3], "Test") && len(stack) == 0:
			o.s.test, o.class = true, m[3]
		case m[2] == "def" && strings.HasPrefix(m[3], "test") && len(stack) == 0:
			o.s.test = true
		case m[2] == "def" && strings.HasPrefix(m[3], "test") && outer.class != "" && len(stack) == 1:
			o.s.test, o.s.name = true, outer.class+"::"+m[3]
		case outer.s.test:
			// A def inside a test is part of it.
			o.s.test, o.s.name = true, outer.s.name
		default:
			o.s.name = m[2] + " " + m[3]
		}
		stack = append(stack, o)
		last, decorated = i+1, 0
	}
	closeTo(0, last)
	slices.SortStableFunc(spans, func(a, b span) int { return a.start - b.start })
	tests, others := collect(spans, lines, deleted)
	return tests, outside(others)
}

// jsTestCall finds a call that defines a test or a suite (testDefRE's for
// JavaScript): its kind, its opening bracket, and its title, whose last
// non-empty submatch testName takes.
var jsTestCall = regexp.MustCompile(`(?:^|[^\w.$])[xf]?(it|test|describe)(?:\.(?:only|skip|todo|concurrent)|\.each\(.*?\))?\s*(\()\s*(?:'([^']*)'|"([^"]*)"|` + "`([^`]*)`" + `)`)

// jsEnclosing reads a JavaScript or TypeScript test file by the brackets
// of its test(…), it(…) and describe(…) calls, skipping strings and
// comments: a line belongs to the innermost test or it call that holds
// it, named with its suites ("suite › case"). A regular expression
// literal holding a bracket can mislead it.
func jsEnclosing(src string, lines, deleted []int) ([]string, string) {
	pairs := matchBrackets(src)
	lineOf := func(off int) int { return strings.Count(src[:off], "\n") + 1 }
	type call struct {
		s     span
		suite bool
		from  int // offsets of the call's brackets
		to    int
	}
	var calls []call
	for _, m := range jsTestCall.FindAllStringSubmatchIndex(src, -1) {
		open := m[5] - 1
		to, ok := pairs[open]
		if !ok {
			return nil, "its brackets do not match, so the tests its changed lines lie in are not known"
		}
		title := ""
		for g := 3; g <= 5; g++ {
			if m[2*g] >= 0 {
				title = src[m[2*g]:m[2*g+1]]
			}
		}
		calls = append(calls, call{s: span{name: title, start: lineOf(open), end: lineOf(to)}, suite: src[m[2]:m[3]] == "describe", from: open, to: to})
	}
	var spans []span
	for i, c := range calls {
		if c.suite {
			continue
		}
		name := c.s.name
		for j := i - 1; j >= 0; j-- {
			if o := calls[j]; o.suite && o.from < c.from && c.to < o.to {
				name = o.s.name + " › " + name
			}
		}
		spans = append(spans, span{name: name, start: c.s.start, end: c.s.end, test: true})
	}
	tests, _ := collect(spans, lines, deleted)
	unsure := ""
	text := strings.Split(src, "\n")
	for _, l := range lines {
		if _, ok := innermost(spans, l, false); !ok && l <= len(text) && !jsInert(text[l-1]) {
			unsure = fmt.Sprintf("line %d lies in no test( or it( call (a hook, a helper or a suite's setup), which any test may use", l)
			break
		}
	}
	return tests, unsure
}

// jsInert reports whether a line changes no test's behaviour by itself:
// blank, a comment, or an import.
func jsInert(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "import ")
}

// matchBrackets maps the offset of each opening bracket of src to that of
// its closing one, skipping JavaScript strings, template literals and
// comments. An unmatched bracket is not in the map.
func matchBrackets(src string) map[int]int {
	pairs := map[int]int{}
	var stack []int
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\'', '"', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			} else if i+1 < len(src) && src[i+1] == '*' {
				end := strings.Index(src[i+2:], "*/")
				if end < 0 {
					return pairs
				}
				i += end + 3
			}
		case '(', '{', '[':
			stack = append(stack, i)
		case ')', '}', ']':
			if len(stack) > 0 {
				pairs[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
			}
		}
	}
	return pairs
}
