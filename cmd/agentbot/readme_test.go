package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docFiles are the documents whose shell examples TestReadmeCommands reads,
// relative to this package: the README, every page of docs/ and the
// deployment's own.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md: is this the repository's root?")
	}
	return slices.Concat([]string{"../../README.md"}, pages, []string{"../../deploy/README.md", "../../deploy/RUNBOOK.md"})
}

// offline are the agentbot commands the doc test runs, in document order,
// in a scratch repository: they need no network, Redis or Docker.
var offline = [][]string{{"version"}, {"config", "init"}, {"config", "validate"}, {"config", "schema"}}

// TestReadmeCommands reads every fenced shell block of the documents: each
// agentbot command must exist with the flags it is shown with; make
// targets must be the Makefile's; go install must name this module's
// command. The commands that can run offline run, in order, in a scratch
// Go repository of each document's own, and must succeed.
func TestReadmeCommands(t *testing.T) {
	module := modulePath(t)
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var lines []docLine
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, shellLines(f, string(text))...)
	}

	flagsOf := map[string][]string{}
	var ran []string
	doc := ""
	for _, l := range lines {
		if f, _, _ := strings.Cut(l.where, ":"); f != doc {
			doc = f
			scratch := t.TempDir()
			writeConfigFile(t, scratch, "go.mod", "module example.com/scratch\n")
			t.Chdir(scratch)
		}
		words := l.words
		switch {
		case len(words) == 0:
		case words[0] == "make":
			for _, target := range words[1:] {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
					t.Errorf("%s: make %s: the Makefile has no such target", l.where, target)
				}
			}
		case words[0] == "go" && len(words) > 2 && words[1] == "install":
			if want := module + "/cmd/agentbot@"; !strings.HasPrefix(words[2], want) {
				t.Errorf("%s: go install %s; want %s…", l.where, words[2], want)
			}
		case words[0] == "agentbot" || words[0] == "bin/agentbot":
			path, flags := commandPath(words[1:])
			if len(path) == 0 {
				if len(flags) == 0 || !slices.Contains([]string{"--help", "-h", "--version"}, flags[0]) {
					t.Errorf("%s: %q names no command", l.where, l.text)
				}
				continue
			}
			key := strings.Join(path, " ")
			known, ok := flagsOf[key]
			if !ok {
				known = helpFlags(t, path)
				flagsOf[key] = known
			}
			if known == nil {
				t.Errorf("%s: agentbot %s: no such command", l.where, key)
				continue
			}
			for _, f := range flags {
				name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
				if name != "h" && name != "help" && !slices.Contains(known, name) {
					t.Errorf("%s: agentbot %s has no flag %s", l.where, key, f)
				}
			}
			if slices.ContainsFunc(offline, func(p []string) bool { return slices.Equal(p, path) }) && argsExist(words[1+len(path):]) {
				env, _, errOut := testEnv(nil)
				if err := run(t.Context(), words[1:], env); err != nil {
					t.Errorf("%s: %s: %v\n%s", l.where, l.text, err, errOut)
				}
				ran = append(ran, key)
			}
		}
	}
	for _, want := range []string{"version", "config init", "config validate"} {
		if !slices.Contains(ran, want) {
			t.Errorf("no document shows agentbot %s, which the first deployment needs", want)
		}
	}
}

// argsExist tells whether every argument that is not a flag names an
// existing file: an example about a file the scratch repository lacks
// (server.yaml) is only checked, not run.
func argsExist(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			return false
		}
	}
	return true
}

// docLine is one command of a shell block.
type docLine struct {
	where, text string
	words       []string
}

// shellLines returns the commands of file's ```sh blocks: continuation
// lines joined, comments dropped, split at ;, &&, || and |, each cut at a
// redirection or a trailing &, leading VAR=value words skipped, and the
// command that agentbot-demo model runs taken for the line's.
// Brackets mark optional parts in the examples and are dropped.
func shellLines(file, text string) []docLine {
	var out []docLine
	in := false
	var pending string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			in = !in && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```shell")
			continue
		}
		if !in {
			continue
		}
		if rest, ok := strings.CutSuffix(trimmed, "\\"); ok {
			pending += rest + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		for _, cmd := range splitCommands(stripComment(full)) {
			words := shellWords(strings.NewReplacer("[", "", "]", "", " | --", " --").Replace(cmd))
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
				words = words[1:]
			}
			if i := slices.IndexFunc(words, func(w string) bool { return w == "&" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") }); i >= 0 {
				words = words[:i]
			}
			// A command run under agentbot-demo's scripted model is checked
			// as itself.
			if len(words) > 0 && filepath.Base(words[0]) == "agentbot-demo" {
				if i := slices.Index(words, "--"); i >= 0 {
					words = words[i+1:]
				}
			}
			out = append(out, docLine{where: file + ":" + strconv.Itoa(i+1), text: strings.TrimSpace(cmd), words: words})
		}
	}
	return out
}

// stripComment drops a # comment that is outside quotes and starts a word.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// splitCommands splits at ;, &&, || and | outside quotes.
func splitCommands(s string) []string {
	var out []string
	var quote rune
	start := 0
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '|' || (c == '&' && i+1 < len(s) && s[i+1] == '&'):
			out = append(out, s[start:i])
			if i+1 < len(s) && (s[i+1] == '&' || s[i+1] == '|') {
				i++
			}
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// shellWords splits a command into words, honouring quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// commandPath splits agentbot's arguments into the command (and, for
// config, tasks and bench, its subcommand) and the flags given.
func commandPath(args []string) (path, flags []string) {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			continue
		}
		switch {
		case len(path) == 0 && i == len(flags):
			path = append(path, a)
		case len(path) == 1 && len(flags) == 0 && (path[0] == "config" || path[0] == "tasks" || path[0] == "bench" || path[0] == "eval" && a == "capture"):
			path = append(path, a)
		}
	}
	return path, flags
}

// helpFlags returns the flags "agentbot PATH --help" lists, or nil when
// the command does not exist.
func helpFlags(t *testing.T, path []string) []string {
	t.Helper()
	env, out, _ := testEnv(nil)
	if err := run(t.Context(), append(slices.Clone(path), "--help"), env); err != nil {
		return nil
	}
	flags := []string{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags = append(flags, m[1])
	}
	return flags
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	return string(m[1])
}

// envOnly are the AGENTBOT_ variables that are no flag: read by the model
// client or serve themselves, or, for the Redis password, only spliced into
// AGENTBOT_REDIS_URL by compose and the chart.
var envOnly = []string{"AGENTBOT_WEBHOOK_SECRET", "AGENTBOT_LLM_BASE_URL", "AGENTBOT_LLM_API_KEY",
	"AGENTBOT_LLM_TIMEOUT", "AGENTBOT_LLM_MAX_RETRIES", "AGENTBOT_REDIS_PASSWORD"}

// TestDeployEnvNamesFlags: every AGENTBOT_ variable that compose and the
// Helm chart set is one agentbot reads, so that a misspelt one fails here
// instead of being ignored in production.
func TestDeployEnvNamesFlags(t *testing.T) {
	t.Parallel()
	known := slices.Clone(envOnly)
	for _, cmd := range []string{"serve", "worker"} {
		for _, f := range helpFlags(t, []string{cmd}) {
			known = append(known, "AGENTBOT_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
		}
	}
	files, err := filepath.Glob("../../deploy/helm/agentbot/templates/*")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../deploy/docker-compose.yml", "../../deploy/helm/agentbot/values.yaml")
	seen := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`AGENTBOT_[A-Z_]+[A-Z]`).FindAllString(string(text), -1) {
			seen++
			if !slices.Contains(known, name) {
				t.Errorf("%s sets %s, which agentbot does not read", f, name)
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d AGENTBOT_ variables in the deployment files", seen)
	}
}

// TestDocsAreLinked: every page of docs/ is linked from the README, which
// is how a reader finds it, and every relative link of the documents leads
// to a file that exists and, with a #fragment, to a heading it has, so a
// page or a section that moves takes its links with it.
func TestDocsAreLinked(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	fromReadme := map[string]bool{}
	for _, l := range mdLinks(string(readme)) {
		fromReadme[filepath.Clean(filepath.Join("../..", l.path))] = true
	}
	for _, p := range pages {
		if !fromReadme[filepath.Clean(p)] {
			t.Errorf("README.md does not link %s", strings.TrimPrefix(p, "../../"))
		}
	}
	if len(pages) < 6 {
		t.Errorf("docs/ holds %d pages; the README links using, policy, operating, security, evaluation and architecture", len(pages))
	}
	anchors := map[string][]string{}
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mdLinks(string(text)) {
			target := filepath.Clean(f)
			if l.path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(f), l.path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which does not exist", f, l.path)
				continue
			}
			if l.fragment == "" {
				continue
			}
			if _, ok := anchors[target]; !ok {
				b, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				anchors[target] = headingAnchors(string(b))
			}
			if !slices.Contains(anchors[target], l.fragment) {
				t.Errorf("%s links %s#%s; %s has no such heading", f, l.path, l.fragment, target)
			}
		}
	}
}

// mdLink is a relative link of a Markdown document: a path (empty for the
// document itself) and a fragment.
type mdLink struct{ path, fragment string }

// mdLinks returns the relative links of text's inline links outside code,
// leaving out those with a scheme (https:, mailto:).
func mdLinks(text string) []mdLink {
	var out []mdLink
	for _, line := range proseLines(text) {
		line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
		for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(line, -1) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(m[1]) {
				continue
			}
			path, fragment, _ := strings.Cut(m[1], "#")
			out = append(out, mdLink{path, fragment})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives text's headings: lower
// case, spaces to hyphens, everything but letters, digits, hyphens and
// underscores dropped, and -1, -2… after a repeated one.
func headingAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		m := regexp.MustCompile(`^#{1,6} +(.*?) *#* *$`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := strings.ReplaceAll(regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

// proseLines returns text's lines outside fenced code blocks.
func proseLines(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
		default:
			out = append(out, line)
		}
	}
	return out
}
