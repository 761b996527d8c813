package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Script is what a Server answers. Each request is answered by the first
// Rule that matches the tool results it ends with, or else by the next unused
// Step, in order. A request that neither matches a rule nor finds a step left
// is answered with an error that says the script is exhausted.
type Script struct {
	Steps []Step `yaml:"steps"`
	Rules []Rule `yaml:"rules"`
	// Usage is reported by every answer whose step sets none. When it is
	// zero, tokens are estimated from the size of the request and the answer
	// (four bytes a token), so the counts grow with the conversation as a
	// real model's do.
	Usage Usage `yaml:"usage"`
}

// Step is one answer: assistant text and tool calls, or an injected fault.
type Step struct {
	Text      string `yaml:"text"`
	ToolCalls []Call `yaml:"tool_calls"`
	// FinishReason defaults to "tool_calls" when the step calls tools and to
	// "stop" otherwise.
	FinishReason string `yaml:"finish_reason"`
	Usage        *Usage `yaml:"usage"`

	// Status, when set, answers with this HTTP status and an OpenAI-style
	// error body carrying Error instead of a completion: 429 and 5xx are
	// what clients retry, and a retry is answered like any request, so
	// "429, then text" scripts a rate limit the client gets past.
	Status int    `yaml:"status"`
	Error  string `yaml:"error"`
	// RetryAfter is sent with a Status answer: as Retry-After in whole
	// seconds, and as Retry-After-Ms (OpenAI's own header) when it is not a
	// whole number of seconds.
	RetryAfter time.Duration `yaml:"retry_after"`
	// Body, when set, is sent verbatim with status 200 instead of a
	// completion, to test how a client takes malformed answers.
	Body string `yaml:"body"`
	// Delay holds the answer back, or until the client gives up.
	Delay time.Duration `yaml:"delay"`
}

// Rule answers a request whose trailing tool results (those after the last
// assistant message, joined by newlines) contain Contains or match Regexp.
type Rule struct {
	Contains string `yaml:"contains"`
	Regexp   string `yaml:"regexp"`
	// Times bounds how often the rule answers; zero means without limit.
	Times int  `yaml:"times"`
	Step  Step `yaml:",inline"`

	re *regexp.Regexp
}

// Call is a scripted tool call. Arguments is the raw JSON text the model
// sends, which a script may make malformed on purpose; in a script file it
// is written either as a mapping (encoded to JSON) or as a string (sent
// verbatim). Name need not be a tool the request offers: that is how an
// unknown tool is injected.
type Call struct {
	ID        string    `yaml:"id"` // defaults to "call_<request>_<index>"
	Name      string    `yaml:"name"`
	Arguments Arguments `yaml:"arguments"`
}

// Arguments is the raw JSON text of a tool call's arguments.
type Arguments string

// UnmarshalYAML takes a mapping or sequence as JSON to encode and a scalar
// as the text itself.
func (a *Arguments) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*a = Arguments(n.Value)
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("line %d: arguments: %w", n.Line, err)
	}
	*a = Arguments(b)
	return nil
}

// Usage is the token counts an answer reports.
type Usage struct {
	PromptTokens     int64 `yaml:"prompt_tokens"`
	CachedTokens     int64 `yaml:"cached_tokens"`
	CompletionTokens int64 `yaml:"completion_tokens"`
}

// Load reads a script file (YAML, or JSON, which is YAML too).
func Load(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("load model script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return Script{}, fmt.Errorf("load model script %s: %w", path, err)
	}
	return s, nil
}

// Parse decodes and checks a script. Unknown keys and wrong types are errors
// with their line number.
func Parse(data []byte) (Script, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Script
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return Script{}, errors.New("empty script")
		}
		return Script{}, err
	}
	if err := s.compile(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// compile checks every step and rule and compiles the rules' expressions.
func (s *Script) compile() error {
	for i, st := range s.Steps {
		if err := st.check(); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	for i := range s.Rules {
		r := &s.Rules[i]
		if err := r.compile(); err != nil {
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	return nil
}

func (r *Rule) compile() error {
	if (r.Contains == "") == (r.Regexp == "") {
		return errors.New("set exactly one of contains and regexp")
	}
	if r.Times < 0 {
		return fmt.Errorf("times %d is negative", r.Times)
	}
	if r.Regexp != "" {
		re, err := regexp.Compile(r.Regexp)
		if err != nil {
			return fmt.Errorf("regexp: %w", err)
		}
		r.re = re
	}
	return r.Step.check()
}

func (r *Rule) matches(toolResults string) bool {
	if r.re != nil {
		return r.re.MatchString(toolResults)
	}
	return strings.Contains(toolResults, r.Contains)
}

func (st Step) check() error {
	kinds := 0
	if st.Status != 0 {
		kinds++
		if st.Status < 400 || st.Status > 599 {
			return fmt.Errorf("status %d is not an HTTP error status", st.Status)
		}
	}
	if st.Body != "" {
		kinds++
	}
	if st.Text != "" || len(st.ToolCalls) > 0 {
		kinds++
	}
	if kinds != 1 {
		return errors.New("set exactly one of: text and/or tool_calls, status, body")
	}
	if st.Status == 0 && st.RetryAfter != 0 {
		return errors.New("retry_after needs a status")
	}
	for i, c := range st.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d has no name", i+1)
		}
	}
	return nil
}
