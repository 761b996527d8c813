package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What "agentbot tasks", "trace" and "audit" print comes partly from
// comments and from the model (a path it chose, a command it ran), so it
// may hold terminal escape sequences that would recolour, rewrite or
// retitle the operator's terminal. Every string they print goes through
// printable, or, for JSON, through jsonEscaper, which use one rule:
// unsafeRune.

// unsafeRune reports whether r must not reach a terminal as it is: control
// characters (C0 with ESC, DEL, C1 with CSI), bidirectional overrides,
// which reorder what the operator reads, and line and paragraph
// separators.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.In(r, unicode.Zl, unicode.Zp)
}

// printable returns s with every unsafe rune written as a Go escape (\x1b,
// \n, \u202e) and every byte that is not UTF-8 as \xff, so that it reads
// as one inert line.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// printableLines is printable for text of several lines, such as a
// task's instructions: each line is made printable, the line breaks stay.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// jsonEscaper writes JSON with the unsafe runes that encoding/json leaves
// as they are (DEL, C1 controls, bidirectional overrides) written as \u
// escapes, which decode to the same strings. Line breaks and tabs are
// left alone: encoding/json escapes them inside strings, so outside they
// are the JSON's own whitespace. Each Write must hold whole runes, as
// json.Encoder's do: one whole value each.
type jsonEscaper struct{ w io.Writer }

func unsafeInJSON(r rune) bool { return r != '\n' && r != '\t' && r != '\r' && unsafeRune(r) }

func (j jsonEscaper) Write(p []byte) (int, error) {
	s := string(p)
	if !strings.ContainsFunc(s, unsafeInJSON) {
		return j.w.Write(p)
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeInJSON(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	if _, err := io.WriteString(j.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
