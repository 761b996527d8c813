package app

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultCommand is the word that addresses agentbot in a comment.
const DefaultCommand = "/agent"

// MaxInstructions bounds, in bytes after cleaning, the free-form text a
// command may carry. Longer instructions are refused with a reply rather than
// cut, so the agent never works from half a request.
const MaxInstructions = 8 << 10

// Action is what agentbot does with a comment.
type Action int

// The three outcomes of parsing a comment.
const (
	// Ignore: the comment is not addressed to agentbot.
	Ignore Action = iota
	// Run: the comment holds a command that becomes a task.
	Run
	// Reply: the comment is addressed to agentbot but cannot run as
	// written; Parsed.Reason says why, in a sentence fit for the user.
	Reply
)

func (a Action) String() string {
	switch a {
	case Run:
		return "run"
	case Reply:
		return "reply"
	}
	return "ignore"
}

// Parsed is the result of ParseCommand.
type Parsed struct {
	Action       Action
	Verb         Verb   // set for Run; VerbHelp for Reply
	Instructions string // cleaned free-form text, for fix, retry, approve, deny, ask, explain note and review
	Reason       string // set for Ignore and Reply
}

// verbArgs reports whether word names a verb and, if so, whether text may
// follow it on the command line.
func verbArgs(word string) (v Verb, known, args bool) {
	switch v := Verb(strings.ToLower(word)); v {
	case VerbFix, VerbRetry, VerbApprove, VerbDeny, VerbAsk, VerbExplain, VerbNote, VerbReview:
		return v, true, true
	case VerbStop, VerbStatus, VerbHelp, VerbFixCI, VerbSetup:
		return v, true, false
	}
	return "", false, false
}

// ParseCommand finds the first command in a comment body. The command word
// (trigger, DefaultCommand when empty) must start a line, after optional
// spaces, matched without regard to case and followed by a space or the end
// of the line: "/agentfoo" is not a command. Lines inside fenced or indented
// code blocks and ">" quotes never hold a command, so quoting or showing a
// command does not run it.
//
// The word after the trigger is a verb when it names one; otherwise the text
// is instructions for a fix. The lines after the command line belong to the
// instructions. HTML comments and invisible characters are removed first:
// they do not render on GitHub, so a reader could not see what they would
// ask the agent to do.
//
// ParseCommand is pure: it reads nothing but its arguments.
func ParseCommand(body, trigger string) Parsed {
	if trigger == "" {
		trigger = DefaultCommand
	}
	lines := strings.Split(CleanText(body), "\n")
	for i, line := range commandLines(lines) {
		if line < 0 {
			continue
		}
		rest, ok := cutFold(lines[i][line:], trigger)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		return parseArgs(trigger, strings.TrimSpace(rest), strings.Join(lines[i+1:], "\n"))
	}
	return Parsed{Action: Ignore, Reason: "no " + trigger + " command"}
}

// parseArgs reads the verb and instructions of a found command: args is the
// rest of the command line, more the lines below it.
func parseArgs(trigger, args, more string) Parsed {
	word, after := args, ""
	if i := strings.IndexAny(args, " \t"); i >= 0 {
		word, after = args[:i], strings.TrimSpace(args[i:])
	}
	verb, known, takesArgs := verbArgs(word)
	switch {
	case !known:
		verb, takesArgs = VerbFix, true
	case !takesArgs && after != "":
		return reply("`%s %s` takes no arguments.", trigger, verb)
	default:
		args = after
	}
	if !takesArgs {
		return Parsed{Action: Run, Verb: verb}
	}
	instr := strings.TrimSpace(args + "\n" + more)
	if word == "" && instr == "" {
		return reply("`%s` needs a verb or instructions; try `%s help`.", trigger, trigger)
	}
	if verb == VerbAsk && instr == "" {
		return reply("`%s ask` needs a question, such as `%s ask where are retries configured?`.", trigger, trigger)
	}
	if verb == VerbNote && instr == "" {
		return reply("`%s note` needs the note, such as `%s note keep the public API unchanged`.", trigger, trigger)
	}
	if len(instr) > MaxInstructions {
		return reply("The instructions are %d bytes long; the limit is %d.", len(instr), MaxInstructions)
	}
	return Parsed{Action: Run, Verb: verb, Instructions: instr}
}

// reply is the Parsed for a command that is answered with help: the reason
// leads the help text.
func reply(format string, args ...any) Parsed {
	return Parsed{Action: Reply, Verb: VerbHelp, Reason: fmt.Sprintf(format, args...)}
}

// commandLines returns, for each line, the byte offset where a command could
// start (after up to three spaces), or -1 for a line that is code, a fence or
// a quote.
func commandLines(lines []string) []int {
	starts := make([]int, len(lines))
	var fence string // the opening fence while inside a fenced block
	for i, line := range lines {
		starts[i] = -1
		off, width := indent(line)
		text := line[off:]
		if fence != "" {
			if width < 4 && closesFence(text, fence) {
				fence = ""
			}
			continue
		}
		if width >= 4 {
			continue // indented code
		}
		if f := openFence(text); f != "" {
			fence = f
			continue
		}
		if strings.HasPrefix(text, ">") {
			continue
		}
		starts[i] = off
	}
	return starts
}

// indent returns the byte length of a line's leading blanks and their width
// in columns, a tab counting to the next multiple of four.
func indent(line string) (off, width int) {
	for off < len(line) {
		switch line[off] {
		case ' ':
			width++
		case '\t':
			width += 4 - width%4
		default:
			return off, width
		}
		off++
	}
	return off, width
}

// openFence returns the fence (three or more backticks or tildes) that text
// opens, or "".
func openFence(text string) string {
	if text == "" || (text[0] != '`' && text[0] != '~') {
		return ""
	}
	n := 0
	for n < len(text) && text[n] == text[0] {
		n++
	}
	if n < 3 || (text[0] == '`' && strings.Contains(text[n:], "`")) {
		return ""
	}
	return text[:n]
}

// closesFence reports whether text closes a block opened by fence: the same
// character, at least as many, and nothing after but blanks.
func closesFence(text, fence string) bool {
	n := 0
	for n < len(text) && text[n] == fence[0] {
		n++
	}
	return n >= len(fence) && strings.TrimSpace(text[n:]) == ""
}

// cutFold returns s without prefix when s starts with it, ignoring case.
func cutFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// CleanText returns s with line endings normalised to "\n", invisible
// characters dropped (format characters such as zero-width spaces,
// bidirectional overrides and Unicode tags, variation selectors, control
// characters other than newline and tab, invalid UTF-8) and HTML comments
// removed. An unterminated comment, or one that removing others has formed,
// runs to the end of the text, as GitHub renders it.
func CleanText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || invisible(r) {
			return -1
		}
		return r
	}, s)
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		before, after, found := strings.Cut(s, "<!--")
		b.WriteString(before)
		if !found {
			break
		}
		_, s, _ = strings.Cut(after, "-->")
	}
	out := b.String()
	if i := strings.Index(out, "<!--"); i >= 0 {
		out = out[:i]
	}
	return out
}

func invisible(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Variation_Selector, r)
}
