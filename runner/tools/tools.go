// Package tools is what the model may do to a task's work tree: read it,
// search it, change it and run the repository's checks, each through a tool
// with a JSON Schema the model sees.
//
// The policy is enforced inside the tools, not by the loop: every write is
// checked against the allowed paths and the diff budget before it touches
// the tree and is refused whole with a reason the model can act on; a shell
// command runs only if the shell policy allows it. Host-side file access goes
// through an *os.Root on the work tree, so a symlink cannot lead out of it;
// commands run in the sandbox through a Runner.
//
// A call never fails the loop: malformed arguments, unknown tools and
// refusals come back as a Result whose Outcome says what happened and whose
// Output tells the model what to do instead.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Runner runs a command in the task's sandbox; the Docker driver's
// Container (runner/sandbox/docker) satisfies it.
type Runner interface {
	Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error)
}

// Outcome classifies a tool call for the loop's counters and stop rules.
type Outcome string

// Outcomes of a call.
const (
	OK             Outcome = "ok"              // the tool did its job
	Failed         Outcome = "failed"          // the tool ran but reports an error the model can fix (no match, no such file, failing check)
	Invalid        Outcome = "invalid"         // unknown tool, malformed JSON or invalid arguments
	BlockedWrite   Outcome = "blocked_write"   // a write the policy refused: a safety incident
	BlockedCommand Outcome = "blocked_command" // a command the shell policy refused: a safety incident
)

// Class groups tools under one approval rule of the policy.
type Class string

// Tool classes.
const (
	ClassRead  Class = "read"  // always allowed
	ClassWrite Class = "write" // Policy.Tools.Write
	ClassShell Class = "shell" // Policy.Tools.Shell
	ClassCheck Class = "check" // the policy's own checks and finish: always allowed
)

// Result is what a call did. Output is the text the model sees.
type Result struct {
	Outcome Outcome
	Output  string
	Target  string     // the path, pattern or command the call was about, for progress lines
	Changed bool       // the work tree changed, or may have (a command ran)
	Checks  []CheckRun // the checks this call ran, in order
	Done    bool       // finish was accepted: the checks pass on the current tree
	Summary string     // finish's summary, when Done
	Title   string     // finish's title for the pull request, when given
}

// CheckRun is one run of one of the policy's checks.
type CheckRun struct {
	Name      string `json:"name"`
	Run       string `json:"run"`
	Passed    bool   `json:"passed"`
	ExitCode  int    `json:"exit_code"`
	TimedOut  bool   `json:"timed_out,omitempty"`
	Output    string `json:"output,omitempty"` // capped head and tail
	Signature string `json:"signature,omitempty"`
	Millis    int64  `json:"millis"`
}

// Config is what a Set needs.
type Config struct {
	Root   *os.Root // the work tree
	Policy policy.Policy
	Runner Runner
	// Originals are the base contents of the files already changed, from
	// Set.Originals of an earlier run of the same task; nil on a fresh tree.
	Originals map[string]*string
	// OutputLimit caps the bytes of one result the model sees; 0 means 16 KiB.
	OutputLimit int
	// ReadOnly offers only the read tools and answer, for a question: no
	// write, command or check; Runner may be nil.
	ReadOnly bool
	// Review offers the read tools, report_finding and finish_review, for
	// a review; it implies ReadOnly.
	Review bool
}

// Set is the tools of one task. It is not safe for concurrent calls: the
// loop runs one call at a time.
type Set struct {
	root   *os.Root
	policy policy.Policy
	runner Runner
	limit  int
	tools  map[string]*tool
	order  []string
	budget *budget
	files  fileCache
	// findings counts the findings report_finding accepted.
	findings int
}

// tool is one entry of the registry.
type tool struct {
	name   string
	desc   string
	class  Class
	schema string
	run    func(ctx context.Context, s *Set, args json.RawMessage) Result
}

// New returns the tools for a work tree under a policy.
func New(cfg Config) (*Set, error) {
	if cfg.Root == nil || (cfg.Runner == nil && !cfg.ReadOnly && !cfg.Review) {
		return nil, errors.New("tools: Root and Runner are required")
	}
	s := &Set{root: cfg.Root, policy: cfg.Policy, runner: cfg.Runner, limit: cfg.OutputLimit}
	if s.limit <= 0 {
		s.limit = 16 << 10
	}
	b, err := newBudget(cfg.Root, cfg.Policy.Limits, cfg.Originals)
	if err != nil {
		return nil, err
	}
	s.budget = b
	s.tools = map[string]*tool{}
	reg := registry()
	if cfg.ReadOnly {
		reg = readOnlyRegistry()
	}
	if cfg.Review {
		reg = reviewRegistry()
	}
	for _, t := range reg {
		s.tools[t.name] = t
		s.order = append(s.order, t.name)
	}
	return s, nil
}

// Approval returns the approval rule that applies to a call of the named tool.
func (s *Set) Approval(name string) policy.Approval {
	t, ok := s.tools[name]
	if !ok {
		return policy.ApprovalAuto // an unknown tool is refused by Call itself
	}
	switch t.class {
	case ClassWrite:
		return orAuto(s.policy.Tools.Write.Policy)
	case ClassShell:
		return orAuto(s.policy.Tools.Shell.Policy)
	}
	return policy.ApprovalAuto
}

// orAuto reads an unset rule as auto, the default of a policy without a
// tools section; shell defaults to the allowlist in app's defaults.
func orAuto(a policy.Approval) policy.Approval {
	if a == "" {
		return policy.ApprovalAuto
	}
	return a
}

// Defs returns the tools offered to the model: all but those the policy
// turns off.
func (s *Set) Defs() []llm.Tool {
	var defs []llm.Tool
	for _, n := range s.order {
		t := s.tools[n]
		if s.Approval(n) == policy.ApprovalOff {
			continue
		}
		defs = append(defs, llm.Tool{Name: t.name, Description: t.desc, Parameters: json.RawMessage(t.schema)})
	}
	return defs
}

// Originals returns the base contents of every file changed so far (nil for
// a file that did not exist), for the task's saved state.
func (s *Set) Originals() map[string]*string { return s.budget.snapshot() }

// Touched returns the files whose contents differ from the base, sorted.
func (s *Set) Touched() []string { return s.budget.touched() }

// Call runs one tool call. It never returns an error: every failure is a
// Result the model can read.
func (s *Set) Call(ctx context.Context, name, arguments string) Result {
	t, ok := s.tools[name]
	if !ok {
		return invalid("unknown tool %q; the tools are: %v", name, s.names())
	}
	if s.Approval(name) == policy.ApprovalOff {
		return invalid("tool %q is turned off by the repository's policy", name)
	}
	if arguments == "" {
		arguments = "{}"
	}
	if !json.Valid([]byte(arguments)) {
		return invalid("the arguments of %s are not valid JSON: %s", name, clip(arguments, 200))
	}
	r := t.run(ctx, s, json.RawMessage(arguments))
	r.Output = capText(r.Output, s.limit)
	return r
}

func (s *Set) names() []string {
	n := append([]string(nil), s.order...)
	sort.Strings(n)
	return n
}

// decode reads a call's arguments strictly: unknown fields and trailing data
// are errors, so that a model's typo is reported instead of ignored.
func decode(args json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the arguments object")
	}
	return nil
}

// withArgs adapts a typed tool body: decoding and validation failures become
// Invalid results that quote the problem.
func withArgs[T interface{ validate() error }](body func(ctx context.Context, s *Set, a T) Result) func(context.Context, *Set, json.RawMessage) Result {
	return func(ctx context.Context, s *Set, raw json.RawMessage) Result {
		var a T
		if err := decode(raw, &a); err != nil {
			return invalid("invalid arguments: %v", err)
		}
		if err := a.validate(); err != nil {
			return invalid("invalid arguments: %v", err)
		}
		return body(ctx, s, a)
	}
}

func invalid(format string, args ...any) Result {
	return Result{Outcome: Invalid, Output: "error: " + fmt.Sprintf(format, args...)}
}

func failed(target, format string, args ...any) Result {
	return Result{Outcome: Failed, Target: target, Output: "error: " + fmt.Sprintf(format, args...)}
}

// registry lists every tool in the order the model sees them.
func registry() []*tool {
	return []*tool{
		{name: "list_files", class: ClassRead, schema: listFilesSchema, run: withArgs(listFiles),
			desc: "List files of the repository under a directory, honouring .gitignore. Optional depth and glob (doublestar, relative to the repository root)."},
		{name: "read_file", class: ClassRead, schema: readFileSchema, run: withArgs(readFile),
			desc: "Read a file with numbered lines, optionally a 1-based inclusive line range. Long files are cut; ask for a range."},
		{name: "search", class: ClassRead, schema: searchSchema, run: withArgs(search),
			desc: "Search file contents with a Go regular expression (or a literal string), optionally only in files matching a glob. Returns path:line: text with context."},
		{name: "find_symbol", class: ClassRead, schema: findSymbolSchema, run: withArgs(findSymbol),
			desc: "Find where a function, method, type, class, constant or variable is defined, by exact name. Exact for Go; pattern-based for Python, JavaScript, TypeScript, Rust, Java, C and C++."},
		{name: "edit_file", class: ClassWrite, schema: editFileSchema, run: withArgs(editFile),
			desc: "Replace exactly one occurrence of old_string with new_string in a file. old_string must match exactly once, including whitespace; include surrounding lines to make it unique."},
		{name: "write_file", class: ClassWrite, schema: writeFileSchema, run: withArgs(writeFile),
			desc: "Create a new file with the given content. Fails if the file exists: change existing files with edit_file or apply_patch."},
		{name: "apply_patch", class: ClassWrite, schema: applyPatchSchema, run: withArgs(applyPatch),
			desc: "Apply a unified diff (git diff format, a/ and b/ prefixes) over one or more files: modify, create (--- /dev/null), delete (+++ /dev/null) or rename. All or nothing."},
		{name: "run_checks", class: ClassCheck, schema: emptySchema, run: withArgs(runChecks),
			desc: "Run the repository's checks, fastest first, stopping at the first failure, whose output is returned."},
		{name: "run_command", class: ClassShell, schema: runCommandSchema, run: withArgs(runCommand),
			desc: "Run a shell command in the sandbox (no network) at the repository root. Only commands the repository's shell policy allows are run."},
		{name: "finish", class: ClassCheck, schema: finishSchema, run: withArgs(finish),
			desc: "Declare the task done with a summary of what changed and why. Accepted only when all checks pass on the current tree; otherwise you are told which check fails."},
	}
}

// The schemas the model sees. additionalProperties is false everywhere
// because decode rejects unknown fields.
const (
	emptySchema     = `{"type":"object","properties":{},"additionalProperties":false}`
	listFilesSchema = `{"type":"object","properties":{
"path":{"type":"string","description":"directory relative to the repository root; default the root"},
"depth":{"type":"integer","minimum":1,"description":"how many directory levels to descend; default 3"},
"glob":{"type":"string","description":"only files matching this doublestar glob, e.g. **/*.go"}},"additionalProperties":false}`
	readFileSchema = `{"type":"object","properties":{
"path":{"type":"string"},
"start_line":{"type":"integer","minimum":1},
"end_line":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`
	searchSchema = `{"type":"object","properties":{
"pattern":{"type":"string","description":"Go (RE2) regular expression, or a literal when literal is true"},
"literal":{"type":"boolean"},
"glob":{"type":"string","description":"only files matching this doublestar glob"},
"context":{"type":"integer","minimum":0,"maximum":10,"description":"lines of context around each match; default 0"},
"max_matches":{"type":"integer","minimum":1,"maximum":200,"description":"default 50"}},"required":["pattern"],"additionalProperties":false}`
	findSymbolSchema = `{"type":"object","properties":{
"name":{"type":"string","description":"exact identifier, e.g. ParseConfig or Server.Handle"},
"glob":{"type":"string","description":"only files matching this doublestar glob"}},"required":["name"],"additionalProperties":false}`
	editFileSchema = `{"type":"object","properties":{
"path":{"type":"string"},
"old_string":{"type":"string","description":"exact text to replace; must occur exactly once"},
"new_string":{"type":"string"}},"required":["path","old_string","new_string"],"additionalProperties":false}`
	writeFileSchema = `{"type":"object","properties":{
"path":{"type":"string"},
"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`
	applyPatchSchema = `{"type":"object","properties":{
"patch":{"type":"string","description":"unified diff in git format"}},"required":["patch"],"additionalProperties":false}`
	runCommandSchema = `{"type":"object","properties":{
"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`
	finishSchema = `{"type":"object","properties":{
"summary":{"type":"string","description":"what changed and why, for the pull request"},
"title":{"type":"string","maxLength":72,"description":"the pull request's title: one line of at most 72 characters, in the imperative, e.g. Fix Sum dropping the first sample"}},"required":["summary"],"additionalProperties":false}`
)
