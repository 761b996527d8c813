package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// What the model writes is shown to people on GitHub: in the pull request's
// body, the status comment and thread replies. A hijacked model would use
// that to act through the bot's name: close other issues with a closing
// keyword ("Fixes #12" in a pull request body closes #12 when it merges),
// mention and so notify anyone, or leave its fence or <details> block to
// hide or forge the checks that follow it. The functions here make such
// text inert; the bot's own text around it keeps its meaning.

// zwj, put between two characters, keeps the text as people read it but
// stops GitHub from seeing a mention or a closing keyword there.
const zwj = "\u200d"

// IssueRef is the issue or pull request a task works on: the only one its
// text may close.
type IssueRef struct {
	Repo   string // owner/name
	Number int
}

// closingRef is a closing keyword and the reference it closes, in each
// form GitHub honours: #N, GH-N, owner/repo#N and the issue's URL, after an
// optional colon. The keyword is a whole word ("prefixes #1" closes
// nothing) followed by a space or a colon.
var closingRef = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:\s*|\s+)` +
	`(#\d+|gh-\d+|[\w.-]+/[\w.-]+#\d+|https?://(?:www\.)?github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+)\b`)

// ownRef reads a closing reference's repository ("" for the same one) and
// number.
var ownRef = regexp.MustCompile(`(?i)^(?:#|gh-|([\w.-]+/[\w.-]+)#|https?://(?:www\.)?github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/)(\d+)$`)

// names reports whether ref, a closing reference, names own.
func (own IssueRef) names(ref string) bool {
	m := ownRef.FindStringSubmatch(ref)
	if m == nil || own.Number == 0 {
		return false
	}
	repo := m[1] + m[2]
	n, err := strconv.Atoi(m[3])
	return err == nil && n == own.Number && (repo == "" || strings.EqualFold(repo, own.Repo))
}

// inertClosing breaks every closing keyword in s whose reference is not
// own, wherever it is, code included: a keyword is whole only when a space
// or colon follows it, and a joiner comes between.
func inertClosing(s string, own IssueRef) string {
	return closingRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := closingRef.FindStringSubmatch(m)
		if own.names(sub[3]) {
			return m
		}
		return sub[1] + zwj + sub[2] + sub[3]
	})
}

// mention is an @-mention as GitHub finds one: an @ that does not follow a
// word character (a mail address is no mention), then a user or team name.
var mention = regexp.MustCompile(`(^|[^\w@])@([A-Za-z0-9][\w-]*)`)

// htmlStart is the start of an HTML tag, comment or declaration: the way
// out of a <details> block, or into an unclosed one or a comment that
// hides the rest of the page.
var htmlStart = regexp.MustCompile(`<([A-Za-z/!?])`)

// Inert returns Markdown written by the model (a summary, a reason) made
// inert for a page people read. Closing keywords that do not name own are
// broken, outside code and inside it; @-mentions and HTML tags are broken
// outside code (where GitHub acts on neither inside it); and a fence the
// text opens and leaves open is closed at its end, so that what follows it
// on the page is not swallowed. The text reads the same.
func Inert(md string, own IssueRef) string {
	md = inertClosing(md, own)
	var b strings.Builder
	var open string // the fence the text is in, "" outside
	for line := range strings.SplitAfterSeq(md, "\n") {
		f := fenceOf(line)
		switch {
		case open != "":
			// In a fence the text is code; only its closing fence matters.
			if f != "" && f[0] == open[0] && len(f) >= len(open) && strings.Trim(line, " \t\r\n"+f[:1]) == "" {
				open = ""
			}
			b.WriteString(line)
		case f != "" && line[0] == f[0]:
			// A fence at the margin is the page's own block, whatever came
			// before: it is closed below when the text leaves it open.
			open = f
			b.WriteString(line)
		default:
			b.WriteString(inertLine(line))
		}
	}
	if open != "" {
		if !strings.HasSuffix(md, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(open + "\n")
	}
	return b.String()
}

// fenceOf is the fence (its character repeated) that line opens or closes
// a code block with, or "": up to three spaces, then three or more
// backticks or tildes; a backtick fence's info string has no backtick.
func fenceOf(line string) string {
	t := strings.TrimRight(line, "\r\n")
	indent := len(t) - len(strings.TrimLeft(t, " "))
	if indent > 3 {
		return ""
	}
	t = t[indent:]
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if n < 3 || (t[0] == '`' && strings.Contains(t[n:], "`")) {
		return ""
	}
	return t[:n]
}

// nestedFence is a fence that is not at the margin: indented, or in a list
// item or a quote. Where it closes depends on its container, so it is not
// one: its characters are escaped.
var nestedFence = regexp.MustCompile("^([ \t>*+\\-.)0-9]*?)(`{3,}|~{3,})")

// inertLine breaks the mentions and HTML tags of one line outside a fence,
// leaving its code spans as they are, and escapes a fence in a container.
func inertLine(line string) string {
	if m := nestedFence.FindStringSubmatchIndex(line); m != nil {
		run := line[m[4]:m[5]]
		escaped := strings.Repeat(`\`+run[:1], len(run))
		return line[:m[4]] + escaped + inertLine(line[m[5]:])
	}
	var b strings.Builder
	for len(line) > 0 {
		start, end := codeSpan(line)
		if start < 0 {
			b.WriteString(inertProse(line))
			break
		}
		b.WriteString(inertProse(line[:start]))
		b.WriteString(line[start:end])
		line = line[end:]
	}
	return b.String()
}

// codeSpan finds the first code span of line: a run of backticks closed by
// a run of the same length. start is -1 when there is none.
func codeSpan(line string) (start, end int) {
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		run := line[i : i+n]
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], run)
			if k < 0 {
				break
			}
			k += j
			m := len(line[k:]) - len(strings.TrimLeft(line[k:], "`"))
			if m == n {
				return i, k + n
			}
			j = k + m
		}
		i += n // an unclosed run is literal backticks
	}
	return -1, -1
}

// entity is a character reference: "&#64;" is an @ to the reader, and to
// GitHub's search for mentions.
var entity = regexp.MustCompile(`&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);`)

// inertProse breaks the mentions, HTML tags and character references of
// text outside code.
func inertProse(s string) string {
	s = entity.ReplaceAllString(s, "&amp;$1;")
	s = htmlStart.ReplaceAllString(s, "&lt;$1")
	return breakMentions(s)
}

// breakMentions puts a joiner after the @ of every mention in s. A
// mention's @ may be the character before the next one's match ("@a-@b"),
// so a second pass takes those the first left.
func breakMentions(s string) string {
	for range 2 {
		s = mention.ReplaceAllString(s, "$1@"+zwj+"$2")
	}
	return s
}

// InertPlain returns plain text written by the model (a pull request's
// title, a commit message) with closing keywords that do not name own and
// @-mentions broken: a commit that reaches the default branch closes the
// issues its message names, whatever the pull request's body says.
func InertPlain(s string, own IssueRef) string {
	return breakMentions(inertClosing(s, own))
}

// CodeBlock returns text (the model's, or output its code made) as a
// fenced code block with info as its language: the fence is longer than
// any run of backticks in text, so text cannot close it, and closing
// keywords in it that do not name own are broken.
func CodeBlock(text, info string, own IssueRef) string {
	fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
	text = inertClosing(text, own)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + info + "\n" + text + fence + "\n"
}

// longestBacktickRun is the length of the longest run of backticks in s,
// which a fence around s must exceed.
func longestBacktickRun(s string) int {
	longest := 0
	for run := range strings.FieldsFuncSeq(s, func(r rune) bool { return r != '`' }) {
		longest = max(longest, len(run))
	}
	return longest
}

// ShownArguments returns a tool call's raw arguments as the people asked
// to approve the call see them: valid JSON re-encoded, indented, with
// every <, > and & escaped, so what they read is what the tool receives;
// ok is false for arguments that are not one JSON value, returned as a
// quoted string, which no tool accepts.
func ShownArguments(raw string) (shown string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // numbers as written, not rounded through float64
	var v any
	if err := dec.Decode(&v); err != nil {
		return strconv.Quote(raw), false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return strconv.Quote(raw), false // more than one value
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return strconv.Quote(raw), false
	}
	return strings.TrimSuffix(out.String(), "\n"), true
}

// CodeSpan returns text (a file name the model chose) as inline code that
// nothing in it can close, with closing keywords that do not name own
// broken.
func CodeSpan(text string, own IssueRef) string {
	return inlineCode(inertClosing(text, own))
}
